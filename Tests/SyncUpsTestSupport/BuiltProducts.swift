import Glibc
import SyncUpsPOSIX

/// Paths of the executables SwiftPM built next to the test bundle (`syncupsd`, `syncupsctl`, the test tool).
public enum BuiltProducts {
    /// The build products directory: where this test binary lives.
    public static let directory: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        precondition(count > 0, "cannot read /proc/self/exe")
        let executable = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var directory = String(executable[..<executable.lastIndex(of: "/")!])
        // The test binary sits inside `<name>.xctest` on some layouts.
        if directory.hasSuffix(".xctest") { directory = String(directory[..<directory.lastIndex(of: "/")!]) }
        return directory
    }()

    public static func path(_ product: String) -> String { directory + "/" + product }

    /// The checkout: the directory holding `.build`.
    public static let repositoryRoot: String = {
        var path = directory
        while let slash = path.lastIndex(of: "/"), !path.hasSuffix("/.build") { path = String(path[..<slash]) }
        return String(path.dropLast("/.build".count))
    }()
}
