import Glibc
import SyncUpsPOSIX

/// Small file helpers for tests.
public enum Files {
    public static func read(_ path: String) -> [UInt8]? {
        guard let fd = try? FileDescriptor.open(path, O_RDONLY) else { return nil }
        defer { fd.close() }
        return try? fd.readToEnd()
    }

    public static func readString(_ path: String) -> String? {
        read(path).map { String(decoding: $0, as: UTF8.self) }
    }

    public static func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) {
        let fd = try! FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: mode)
        defer { fd.close() }
        try! fd.writeAll(bytes)
    }

    public static func write(_ path: String, _ text: String) {
        write(path, Array(text.utf8))
    }

    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    public static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    public static func list(_ directory: String) -> [String] {
        ((try? DirectoryListing.names(in: directory)) ?? []).sorted()
    }

    /// Every file below `directory` (relative path → bytes), for checking that nothing changed.
    public static func snapshot(of directory: String) -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        func visit(_ relative: String) {
            let path = relative.isEmpty ? directory : directory + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0 else { return }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                for name in list(path) { visit(relative.isEmpty ? name : relative + "/" + name) }
            } else {
                files[relative] = read(path) ?? []
            }
        }
        visit("")
        return files
    }

    /// Replaces `path` atomically the way an editor's "save" does (write a temporary file, rename it over).
    public static func replace(_ path: String, with text: String) {
        let temporary = path + ".editor-tmp"
        write(temporary, text)
        rename(temporary, path)
    }
}
