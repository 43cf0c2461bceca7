import Glibc
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// Where `XDG_RUNTIME_DIR` is unset (a fresh container, `su`, some SSH sessions), the daemon and `syncupsctl`
/// meet in `/tmp/syncupsd-<uid>`, the user's own 0700 directory, and refuse one that is not.
///
/// Each test runs the binaries as an ordinary uid in a mount namespace with an empty, world-writable `/tmp` of
/// its own (as on any desktop), so its `/tmp/syncupsd-<uid>` meets no real user's and no other test's.
@Suite(.enabled(if: geteuid() == 0, "a mount namespace and another uid need root (CI runs as root)"))
struct WithoutXDGRuntimeDirTests {
    /// A user without `XDG_RUNTIME_DIR`, and the namespace with its private `/tmp`, alive while this is.
    final class ScratchUser {
        let uid: uid_t = 3_000_000
        let namespace: Subprocess
        var runtimeDirectory: String { "/tmp/syncupsd-\(uid)" }

        init() throws {
            // `cat` holds the namespace open until its stdin closes. A build under /tmp (a CI checkout there)
            // would vanish under the private /tmp: it is carried over through a bind mount.
            let products = BuiltProducts.path("syncupsd").split(separator: "/").dropLast().joined(separator: "/")
            let keepProducts =
                "/\(products)".hasPrefix("/tmp/")
                ? "mount --bind '/\(products)' /mnt && mount -t tmpfs -o mode=1777 tmpfs /tmp"
                    + " && mkdir -p '/\(products)' && mount --bind /mnt '/\(products)'"
                : "mount -t tmpfs -o mode=1777 tmpfs /tmp"
            namespace = try Subprocess(
                executable: "/usr/bin/unshare",
                arguments: [
                    "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                    "\(keepProducts) && echo ready && exec cat",
                ],
                standardInput: .pipe, standardOutput: .pipe, standardError: .inherit)
            var reader = LineReader(fd: namespace.standardOutput!)
            guard let line = try? reader.nextLine(timeout: .seconds(10)), line.elementsEqual("ready".utf8) else {
                throw TestFailure("could not make a mount namespace with a private /tmp")
            }
        }

        deinit {
            namespace.closeStreams()
            _ = namespace.wait()
        }

        /// `nsenter … env -u XDG_RUNTIME_DIR -u SYNCUPSD_SOCKET setpriv --reuid … PROGRAM ARGS`: what a shell
        /// without a runtime directory runs, in the namespace.
        func command(_ program: String, _ arguments: [String], asRoot: Bool = false, setting: [String] = [])
            -> [String]
        {
            let user = asRoot ? [] : ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"]
            return [
                "-t", String(namespace.pid), "-m", "--", "/usr/bin/env", "-u", "XDG_RUNTIME_DIR", "-u",
                "SYNCUPSD_SOCKET", "HOME=/tmp/home", "XDG_DATA_HOME=/tmp/home/data",
                "XDG_CONFIG_HOME=/tmp/home/config",
            ] + setting + user + [program] + arguments
        }

        /// Runs a shell command as root in the namespace (to set up /tmp).
        func asRoot(_ script: String) throws {
            let result = try CommandResult.run("/usr/bin/nsenter", command("/bin/sh", ["-c", script], asRoot: true))
            guard result.exitCode == 0 else { throw TestFailure("\(script): \(result.standardError)") }
        }

        func startDaemon() throws -> (Subprocess, OutputCollector) {
            let daemon = try Subprocess(
                executable: "/usr/bin/nsenter",
                arguments: command(
                    BuiltProducts.path("syncupsd"), ["--audio-device", "null", "--speech-engine", "none"]),
                standardInput: .null, standardOutput: .null, standardError: .pipe)
            return (daemon, try OutputCollector(daemon.standardError!, name: "syncupsd-log"))
        }

        /// syncupsctl as the user, with `setting` (`KEY=VALUE`) in its environment.
        func stop(_ daemon: Subprocess, _ log: OutputCollector) {
            daemon.send(SIGTERM)
            _ = daemon.wait()
            log.join()
        }

        func syncupsctl(_ arguments: [String], setting: [String] = []) throws -> CommandResult {
            try CommandResult.run(
                "/usr/bin/nsenter", command(BuiltProducts.path("syncupsctl"), arguments, setting: setting))
        }
    }

    @Test func theDaemonWarnsAndListensInTmpWhereSyncupsctlFindsIt() throws {
        let user = try ScratchUser()
        try user.asRoot("mkdir -m 0700 /tmp/home && chown \(user.uid):\(user.uid) /tmp/home")
        let (daemon, log) = try user.startDaemon()
        defer { user.stop(daemon, log) }
        #expect(log.wait { $0.contains(" ready on ") || $0.contains("error") })
        #expect(log.contents.contains("ready on \(user.runtimeDirectory)/socket"), "\(log.contents)")
        let warnings = log.contents.split(separator: "\n").filter { $0.contains("XDG_RUNTIME_DIR is not set") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.hasPrefix("warning: ") == true, "\(warnings)")
        let listing = try CommandResult.run(
            "/usr/bin/nsenter", user.command("/usr/bin/stat", ["-c", "%U %u %a %F", user.runtimeDirectory]))
        #expect(listing.standardOutput == "UNKNOWN \(user.uid) 700 directory\n")

        let status = try user.syncupsctl(["status"])
        #expect(status.exitCode == 0, "\(status.standardError)")
        #expect(status.standardOutput.contains("socket:    \(user.runtimeDirectory)/socket\n"))
    }

    /// A client whose XDG_RUNTIME_DIR is set (another login of the same user) still finds a daemon started
    /// without it, in /tmp; with no daemon at all, the hint names both places.
    @Test func aClientWithXDGRuntimeDirFindsTheDaemonInTmp() throws {
        let user = try ScratchUser()
        try user.asRoot(
            "mkdir -m 0700 /tmp/home /tmp/home/run && chown \(user.uid):\(user.uid) /tmp/home /tmp/home/run")
        let nobody = try user.syncupsctl(["status"], setting: ["XDG_RUNTIME_DIR=/tmp/home/run"])
        #expect(nobody.exitCode == 69)
        #expect(
            nobody.standardError.contains("/tmp/home/run/syncupsd/socket, \(user.runtimeDirectory)/socket"),
            "\(nobody.standardError)")
        let (daemon, log) = try user.startDaemon()
        defer { user.stop(daemon, log) }
        #expect(log.wait { $0.contains(" ready on ") || $0.contains("error") })
        let status = try user.syncupsctl(["status"], setting: ["XDG_RUNTIME_DIR=/tmp/home/run"])
        #expect(status.exitCode == 0, "\(status.standardError)")
        #expect(status.standardOutput.contains("socket:    \(user.runtimeDirectory)/socket\n"))
    }

    /// How a directory squatted in /tmp before the daemon starts may look.
    enum Squat: String, CaseIterable, Sendable {
        case anotherOwner, looserMode, symbolicLink, plainFile
    }

    @Test(arguments: Squat.allCases)
    func bothRefuseADirectoryThatIsNotTheUsersOwn(_ squat: Squat) throws {
        let user = try ScratchUser()
        let path = user.runtimeDirectory
        let expected: String
        switch squat {
        case .anotherOwner:
            try user.asRoot("mkdir -m 0700 \(path)")
            expected = "it belongs to uid 0, not to uid \(user.uid)"
        case .looserMode:
            try user.asRoot("mkdir -m 0755 \(path) && chown \(user.uid):\(user.uid) \(path)")
            expected = "its mode is 755, not 700"
        case .symbolicLink:
            // To a directory the user does own.
            try user.asRoot(
                "mkdir -m 0700 /tmp/own && chown \(user.uid):\(user.uid) /tmp/own && ln -s /tmp/own \(path)")
            expected = "it is not a directory"
        case .plainFile:
            try user.asRoot("touch \(path) && chown \(user.uid):\(user.uid) \(path)")
            expected = "it is not a directory"
        }
        let (daemon, log) = try user.startDaemon()
        #expect(daemon.wait() == .exited(1))
        log.join()
        #expect(log.contents.contains("refusing \(path)"), "\(log.contents)")
        #expect(log.contents.contains(expected), "\(log.contents)")
        try user.asRoot("! test -e \(path)/socket")

        let status = try user.syncupsctl(["status"])
        #expect(status.exitCode == 69)
        #expect(status.standardError.contains("refusing \(path)"), "\(status.standardError)")
        #expect(status.standardError.contains(expected))
    }
}
