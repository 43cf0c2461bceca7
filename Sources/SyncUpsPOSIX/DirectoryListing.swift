import Glibc
import Synchronization

/// Reads the names in a directory.
public enum DirectoryListing {
    /// The entries of `path`, without `.` and `..`, in no particular order.
    public static func names(in path: String) throws(SystemError) -> [String] {
        BlockingWork.check("listing \(path)")
        #if DEBUG
            listed.withLock { $0[path, default: 0] += 1 }
        #endif
        guard let directory = opendir(path) else { throw SystemError("opendir(\(path))", .current) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    #if DEBUG
        /// How many times `path` was listed (debug builds, for tests that count what a batch of work lists).
        public static func listings(of path: String) -> Int { listed.withLock { $0[path] ?? 0 } }

        private static let listed = Mutex<[String: Int]>([:])
    #endif
}
