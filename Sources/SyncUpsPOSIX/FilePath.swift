import Glibc

/// Paths stay `String`s (what the C calls take); these are the only places that join or split them, so the
/// root, a trailing slash and a name without a directory are each handled once.
public enum FilePath {
    /// The size in bytes of the file at `path` (followed if a link), or nil if there is none to be seen.
    public static func size(at path: String) -> Int64? {
        BlockingWork.check("the size of \(path)")
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// `directory/name…`, with exactly one slash at each joint (`join("/", "x")` is `/x`).
    public static func join(_ directory: String, _ names: String...) -> String {
        var path = directory
        for name in names {
            if path.isEmpty {
                path = name
            } else {
                path += path.hasSuffix("/") ? name : "/" + name
            }
        }
        return path
    }

    /// The path without trailing slashes, except the root itself (`/a/b/` is `/a/b`, `/` stays `/`).
    public static func trimmingTrailingSlashes(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        return String(path)
    }

    /// The directory part: `/a/b` is `/a`, `/a` is `/`, a bare name is `.`.
    public static func directory(of path: String) -> String {
        let path = trimmingTrailingSlashes(path)
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The last component: `/a/b` is `b`, a bare name is itself.
    public static func name(of path: String) -> String {
        let path = trimmingTrailingSlashes(path)
        guard let slash = path.lastIndex(of: "/"), path != "/" else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Each directory on the way to `path`, outermost first, ending with `path` (`/a/b` gives `/a`, `/a/b`;
    /// a relative `a/b` gives `a`, `a/b`): what `mkdir -p` creates.
    public static func ancestors(of path: String) -> [String] {
        var prefix = path.hasPrefix("/") ? "/" : ""
        var result: [String] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix = join(prefix, String(component))
            result.append(prefix)
        }
        return result
    }
}
