import Glibc

/// Writing to standard output and error with `write(2)`: whole strings, unbuffered, so a line printed for a
/// status bar reaches it at once and concurrent writers never interleave within a line.
public enum Console {
    /// Writes `text` to standard output; false if the reader went away (EPIPE).
    @discardableResult
    public static func out(_ text: String) -> Bool {
        write(text, to: .standardOutput)
    }

    /// Writes `text` to standard error.
    @discardableResult
    public static func error(_ text: String) -> Bool {
        write(text, to: .standardError)
    }

    @discardableResult
    public static func write(_ text: String, to fd: FileDescriptor) -> Bool {
        (try? fd.writeAll(text.utf8)) != nil
    }

    @discardableResult
    public static func write(_ bytes: [UInt8], to fd: FileDescriptor) -> Bool {
        (try? fd.writeAll(bytes)) != nil
    }
}
