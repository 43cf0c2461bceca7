import SyncUpsPOSIX
import Testing

@Suite struct FilePathTests {
    @Test(arguments: [
        ("/a/b", "/a", "b"),
        ("/a/b/", "/a", "b"),
        ("/a", "/", "a"),
        ("/", "/", "/"),
        ("name", ".", "name"),
        ("a/b", "a", "b"),
    ])
    func splitsAPathOnce(path: String, directory: String, name: String) {
        #expect(FilePath.directory(of: path) == directory)
        #expect(FilePath.name(of: path) == name)
    }

    @Test func joinsWithExactlyOneSlash() {
        #expect(FilePath.join("/", "x") == "/x")
        #expect(FilePath.join("/a/", "x", "y.json") == "/a/x/y.json")
        #expect(FilePath.join("/a", "b/c") == "/a/b/c")
        #expect(FilePath.join("", "x") == "x")
        #expect(FilePath.trimmingTrailingSlashes("/a//") == "/a")
        #expect(FilePath.trimmingTrailingSlashes("/") == "/")
    }

    @Test func listsTheDirectoriesThatMkdirPCreates() {
        #expect(FilePath.ancestors(of: "/a//b/") == ["/a", "/a/b"])
        #expect(FilePath.ancestors(of: "a/b") == ["a", "a/b"])
        #expect(FilePath.ancestors(of: "/") == [])
    }
}
