import Glibc

/// A POSIX error number, named and described with the C library's own `strerror`.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: CInt

    public init(rawValue: CInt) {
        self.rawValue = rawValue
    }

    /// The calling thread's current `errno`.
    public static var current: Errno { Errno(rawValue: errno) }

    public var description: String { String(cString: strerror(rawValue)) }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let ioError = Errno(rawValue: EIO)
    public static let fileTooLarge = Errno(rawValue: EFBIG)
    public static let readOnlyFileSystem = Errno(rawValue: EROFS)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let noDevice = Errno(rawValue: ENODEV)
    public static let notADirectory = Errno(rawValue: ENOTDIR)
    public static let tooManyLinks = Errno(rawValue: ELOOP)
}

/// A failed system call: which call, on what, and the error it returned (`open(/x/sync-ups.json): No space left…`).
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var errno: Errno

    public init(_ operation: String, _ errno: Errno) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation): \(errno)" }
}

/// Runs a system call again while it fails with `EINTR` (a signal arrived while it waited), and returns
/// its result: on -1, `errno` is the error. The one place the codebase retries an interrupted call; callers
/// that want a thrown error use `syscall`, callers that treat some errors as answers (`EAGAIN`) use this.
@inlinable
public func retryingInterrupts<Result: FixedWidthInteger>(_ body: () -> Result) -> Result {
    while true {
        let result = body()
        if result != -1 || errno != EINTR { return result }
    }
}

/// Runs a system call, retrying while it fails with `EINTR`, and turns a -1 result into a thrown `SystemError`.
@discardableResult
public func syscall<Result: FixedWidthInteger>(
    _ operation: @autoclosure () -> String,
    _ body: () -> Result
) throws(SystemError) -> Result {
    let result = retryingInterrupts(body)
    if result == -1 { throw SystemError(operation(), .current) }
    return result
}
