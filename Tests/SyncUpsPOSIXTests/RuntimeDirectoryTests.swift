import SyncUpsPOSIX
import Testing

/// Where the socket is: one rule for the daemon and for syncupsctl (the directory checks run end to end, in
/// EndToEndTests' WithoutXDGRuntimeDirTests, as another user).
@Suite struct RuntimeDirectoryTests {
    @Test func isADirectoryOfItsOwnInXDGRuntimeDir() {
        let directory = RuntimeDirectory.locate(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], uid: 1000)
        #expect(directory.path == "/run/user/1000/syncupsd")
        #expect(directory.socketPath == "/run/user/1000/syncupsd/socket")
        #expect(!directory.isReplacement)
    }

    /// The XDG Base Directory spec: an unset or relative XDG_RUNTIME_DIR is no runtime directory at all.
    @Test(arguments: [[:], ["XDG_RUNTIME_DIR": ""], ["XDG_RUNTIME_DIR": "run/user/1000"]])
    func fallsBackToTmpNamedByUidWithoutAnAbsoluteXDGRuntimeDir(_ environment: [String: String]) {
        let directory = RuntimeDirectory.locate(environment: environment, uid: 1000)
        #expect(directory.socketPath == "/tmp/syncupsd-1000/socket")
        #expect(directory.isReplacement)
        #expect(directory.owner == 1000)
    }
}
