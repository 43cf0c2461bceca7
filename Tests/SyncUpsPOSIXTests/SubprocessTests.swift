import Glibc
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@Suite struct SubprocessTests {
    /// A supervised child leads its own process group, and, as init of its own PID namespace, takes what it
    /// detached with `setsid` with it when it is killed.
    @Test(.enabled(if: ProcessTable.userNamespacesWork, "user namespaces are unavailable here"))
    func aSupervisedChildTakesWhatItDetachedWithIt() throws {
        let marker = ProcessTable.uniqueSleep()
        defer { ProcessTable.kill(withArgument: marker) }
        let child = try Subprocess(
            executable: "/bin/sh",
            arguments: ["-c", "setsid sleep \(marker) > /dev/null 2>&1 < /dev/null & echo $$; exec sleep \(marker)"],
            standardOutput: .pipe, containment: .supervised)
        defer { child.closeStreams() }
        var reader = LineReader(fd: child.standardOutput!, maxLineBytes: 64)
        let pidInside = String(decoding: try reader.nextLine(timeout: .seconds(10)), as: UTF8.self)
        #expect(getpgid(child.pid) == child.pid)
        #expect(child.isContained)
        #expect(pidInside == "1", "init of its own namespace")
        let deadline = MonotonicInstant.now() + .seconds(10)
        while ProcessTable.processes(withArgument: marker).count < 2 && MonotonicInstant.now() < deadline {}
        child.send(SIGKILL)
        #expect(child.wait() == .signaled(SIGKILL))
        #expect(ProcessTable.processes(withArgument: marker).isEmpty, "the kernel ended the namespace with its init")
    }

    /// Every descriptor of ours is close-on-exec and the child's are made by dup2 in order: a descriptor
    /// passed at its own number must still reach the child, and one whose number an earlier pair targets
    /// must not be overwritten before it is passed on.
    @Test func passesDescriptorsWhoseNumbersAreAlsoTargets() throws {
        // A number the kernel hands out atomically (other tests open descriptors meanwhile), close-on-exec
        // like all of ours; bash, unlike dash, redirects descriptors above 9.
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { readEnd.close() }
        let number = fcntl(writeEnd.rawValue, F_DUPFD_CLOEXEC, CInt(100))
        #expect(number >= 100)
        writeEnd.close()
        let own = FileDescriptor(rawValue: CInt(number))
        let (otherRead, otherWrite) = try FileDescriptor.pipe()
        defer { otherRead.close() }

        let cases: [[(parent: FileDescriptor, child: CInt)]] = [
            [(own, CInt(number))], [(otherWrite, CInt(number)), (own, 4)],
        ]
        for passing in cases {
            let script = passing.count == 1 ? "echo own >&\(number)" : "echo other >&\(number); echo own >&4"
            let child = try Subprocess(executable: "/bin/bash", arguments: ["-c", script], extraDescriptors: passing)
            _ = child.wait()
        }
        own.close()
        otherWrite.close()
        #expect(String(decoding: try readEnd.readToEnd(), as: UTF8.self) == "own\nown\n")
        #expect(String(decoding: try otherRead.readToEnd(), as: UTF8.self) == "other\n")
    }

    /// A descriptor some library opened without close-on-exec must not reach the child.
    @Test func passesNoDescriptorButTheMappedOnes() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { readEnd.close() }
        let leaked = open("/dev/null", O_RDONLY)  // no O_CLOEXEC, as ALSA's null device opens /dev/full
        defer { Glibc.close(leaked) }
        let child = try Subprocess(
            executable: "/bin/sh", arguments: ["-c", "ls /proc/self/fd >&3"],
            extraDescriptors: [(writeEnd, 3)])
        writeEnd.close()
        _ = child.wait()
        let open = String(decoding: try readEnd.readToEnd(), as: UTF8.self).split(separator: "\n")
        #expect(!open.contains(Substring("\(leaked)")), "the child had \(open)")
    }
}
