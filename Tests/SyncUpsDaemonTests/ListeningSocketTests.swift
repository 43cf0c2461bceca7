import Glibc
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// The socket file is the daemon's to remove at exit only while it is the one it made.
@Suite struct ListeningSocketTests {
    /// A careless user removed the socket and its lock file while a daemon ran and started another daemon on
    /// the same path: the first one's exit removed the second one's socket, which then ran unreachable
    /// (attack 88). A file or a link put in its place was removed too.
    @Test(arguments: ["another daemon's socket", "a file", "a link"])
    func removesItsSocketFileOnlyWhileItIsTheOneItMade(replacement: String) throws {
        let directory = TemporaryDirectory("listening-socket")
        let path = directory.path + "/socket"
        let first = try ListeningSocket.create(at: path, in: nil)
        defer { first.fd.close() }
        unlink(path)
        unlink(path + ".lock")
        var second: ListeningSocket?
        switch replacement {
        case "another daemon's socket": second = try ListeningSocket.create(at: path, in: nil)
        case "a file": Files.write(path, "notes")
        default: #expect(symlink(directory.path + "/elsewhere", path) == 0)
        }
        first.removeFile()
        var info = stat()
        #expect(lstat(path, &info) == 0, "\(replacement) was removed by the first daemon's exit")
        if let second {
            #expect((info.st_mode & S_IFMT) == S_IFSOCK)
            let client = try UnixSocket.connect(path: path)
            client.close()
            second.removeFile()
            second.fd.close()
            #expect(lstat(path, &info) != 0, "the second daemon's own exit removes its socket")
        }
    }

    /// Its own socket file is removed at exit, as before.
    @Test func removesItsOwnSocketFile() throws {
        let directory = TemporaryDirectory("listening-socket")
        let path = directory.path + "/socket"
        let socket = try ListeningSocket.create(at: path, in: nil)
        socket.removeFile()
        socket.fd.close()
        var info = stat()
        #expect(lstat(path, &info) != 0)
    }
}
