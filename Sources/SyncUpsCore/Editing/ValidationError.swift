/// A create or edit request that the model refuses, naming the field and saying why.
public struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}
