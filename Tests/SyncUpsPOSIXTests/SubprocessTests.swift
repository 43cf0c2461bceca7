import Glibc
import SyncUpsPOSIX
import Testing

@Suite struct SubprocessTests {
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
}
