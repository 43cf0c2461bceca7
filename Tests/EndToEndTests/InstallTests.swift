import Glibc
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// `make install` and `make uninstall`, run for real into temporary trees with the binaries of this build.
/// Serialized: each test runs `make install`, and concurrent runs would rewrite the same `.build/man` pages.
@Suite(.serialized) struct InstallTests {
    let directory = TemporaryDirectory("install")

    func make(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        try CommandResult.run(
            "/usr/bin/make",
            ["-C", BuiltProducts.repositoryRoot, "--no-print-directory", "BUILT=" + BuiltProducts.directory]
                + arguments,
            environment: environment)
    }

    /// Every file and symlink under `root`, relative to it, sorted.
    func tree(_ root: String) throws -> [String] {
        try CommandResult.run("/usr/bin/find", [root, "(", "-type", "f", "-o", "-type", "l", ")", "-printf", "%P\\n"])
            .standardOutput.split(separator: "\n").map(String.init).sorted()
    }

    func mode(_ path: String) -> mode_t {
        var status = stat()
        stat(path, &status)
        return status.st_mode & 0o7777
    }

    @Test func stagesTheConventionalTreeUnderDestdirAndRemovesItAgain() throws {
        let destination = directory.appending("stage")
        let installed = try make(["install", "DESTDIR=" + destination, "PREFIX=/usr"])
        #expect(installed.exitCode == 0, "\(installed.standardError)")
        #expect(
            try tree(destination) == [
                "usr/bin/syncups-whisper", "usr/bin/syncupsctl", "usr/bin/syncupsd", "usr/bin/syncupsd-voice-model",
                "usr/lib/systemd/user/syncupsd.service", "usr/lib/systemd/user/syncupsd.socket",
                "usr/share/bash-completion/completions/syncupsctl", "usr/share/bash-completion/completions/syncupsd",
                "usr/share/doc/syncupsd/ARCHITECTURE.md", "usr/share/doc/syncupsd/README.md",
                "usr/share/doc/syncupsd/i3blocks/README.md", "usr/share/doc/syncupsd/i3blocks/syncups",
                "usr/share/doc/syncupsd/polybar/README.md", "usr/share/doc/syncupsd/polybar/syncups.ini",
                "usr/share/doc/syncupsd/protocol.md", "usr/share/doc/syncupsd/syncupsd.conf",
                "usr/share/doc/syncupsd/tmux/README.md", "usr/share/doc/syncupsd/tmux/syncups.tmux",
                "usr/share/doc/syncupsd/waybar/README.md", "usr/share/doc/syncupsd/waybar/config.jsonc",
                "usr/share/doc/syncupsd/waybar/style.css",
                "usr/share/fish/vendor_completions.d/syncupsctl.fish",
                "usr/share/fish/vendor_completions.d/syncupsd.fish",
                "usr/share/man/man1/syncupsctl.1", "usr/share/man/man1/syncupsd-voice-model.1",
                "usr/share/man/man5/syncupsd.conf.5",
                "usr/share/man/man8/syncupsd.8",
                "usr/share/syncupsd/speech/faster-whisper/README.md",
                "usr/share/syncupsd/speech/faster-whisper/install.sh",
                "usr/share/syncupsd/speech/faster-whisper/syncups-whisper",
                "usr/share/syncupsd/speech/faster-whisper/syncups_whisper.py",
                "usr/share/syncupsd/voice/ge2e_convert.py", "usr/share/syncupsd/voice/install.sh",
                "usr/share/zsh/site-functions/_syncupsctl",
            ])
        #expect(mode(destination + "/usr/bin/syncupsd") == 0o755)
        #expect(mode(destination + "/usr/lib/systemd/user/syncupsd.service") == 0o644)
        let service = Files.readString(destination + "/usr/lib/systemd/user/syncupsd.service") ?? ""
        #expect(service.contains("\nExecStart=/usr/bin/syncupsd\n"))
        // The man pages are roff, made from the scdoc sources.
        #expect(
            Files.readString(destination + "/usr/share/man/man8/syncupsd.8")?.contains("\n.TH \"syncupsd\" \"8\"")
                == true)

        let removed = try make(["uninstall", "DESTDIR=" + destination, "PREFIX=/usr"])
        #expect(removed.exitCode == 0, "\(removed.standardError)")
        #expect(try tree(destination) == [])
    }

    @Test func installsForOneUserWithUnitsWhereSystemdLooksAndTheyVerify() throws {
        let home = directory.appending("home")
        // As the README writes it; zsh and fish hand make the tilde unexpanded, as this does.
        let installed = try make(["install", "PREFIX=~/.local", "HOME=" + home], environment: ["HOME": home])
        #expect(installed.exitCode == 0, "\(installed.standardError)")
        let units = home + "/.local/share/systemd/user"
        let service = Files.readString(units + "/syncupsd.service") ?? ""
        #expect(service.contains("\nExecStart=\(home)/.local/bin/syncupsd\n"))

        // systemd's own checker on units installed the same way, through the target users run: it fails on a
        // missing binary or man page and on any warning (an unknown key).
        let verified = try make(["verify-units"])
        #expect(verified.exitCode == 0, "\(verified.standardError)")
        #expect(verified.standardError == "")
        #expect(verified.standardOutput.hasSuffix("are valid\n"))

        // The bash completion loads without a word on stderr and registers both commands.
        let bash = try CommandResult.run(
            "/bin/bash",
            [
                "-c",
                "source \(home)/.local/share/bash-completion/completions/syncupsctl && complete -p syncupsctl syncupsd",
            ])
        #expect(bash.exitCode == 0)
        #expect(bash.standardError == "")
        #expect(bash.standardOutput == "complete -F _syncupsctl syncupsctl\ncomplete -F _syncupsd syncupsd\n")
        // The installed whisper launcher finds its engine through the symlink.
        let whisper = try CommandResult.run(
            home + "/.local/bin/syncups-whisper", ["--help"], environment: ["HOME": home])
        #expect(whisper.standardOutput.contains("usage"))
        // The installed voice model installer finds its converter through the symlink and checks the weights in
        // place (the test weights: no download).
        let weights =
            (Subprocess.currentEnvironment()["SYNCUPS_VOICE_DIR"] ?? BuiltProducts.repositoryRoot + "/.build/voice")
        if Files.exists(weights + "/ge2e.weights") {
            let voice = try CommandResult.run(
                home + "/.local/bin/syncupsd-voice-model", [],
                environment: ["HOME": home, "SYNCUPS_VOICE_DIR": weights, "PATH": "/usr/bin:/bin"])
            #expect(voice.exitCode == 0, "\(voice.standardError)")
            #expect(voice.standardOutput.contains("is already installed in \(weights)"), "\(voice.standardOutput)")
        }
    }

    /// The units as `make install` puts them, under a real `systemd --user` of this machine's systemd, in a
    /// private mount namespace as an ordinary user (see scripts/test-systemd-user): static verification cannot
    /// see a setting that only fails when a user manager applies it, such as dropping capabilities.
    @Test(.enabled(if: geteuid() == 0, "a private mount namespace and another user need root (CI runs as root)"))
    func installedUnitsStartSandboxedUnderARealUserManager() throws {
        let result = try CommandResult.run(
            BuiltProducts.repositoryRoot + "/scripts/test-systemd-user", [BuiltProducts.directory])
        #expect(result.exitCode == 0, "\(result.standardOutput)\(result.standardError)")
        #expect(result.standardOutput.contains("test-systemd-user: all checks passed"))
        #expect(!result.standardOutput.contains("FAIL"))
    }
}
