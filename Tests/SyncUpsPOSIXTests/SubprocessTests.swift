import Glibc
import SyncUpsPOSIX
import Testing

@Suite struct SubprocessTests {
    /// Every descriptor of ours is close-on-exec and the child's are made by dup2 in order: a descriptor
    /// passed at its own number must still reach the child, and one whose number an earlier pair targets
    /// must not be overwritten before it is passed on.
    @Test func passesDescriptorsWhoseNumbersAreAlsoTargets() throws {
        // High numbers no other test is opening meanwhile (bash, unlike dash, redirects descriptors above 9).
        guard let number = (200...260).first(where: { fcntl($0, F_GETFD) == -1 }) else {
            Issue.record("no free descriptor number from 200 to 260 in the test process")
            return
        }
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { readEnd.close() }
        #expect(fcntl(writeEnd.rawValue, F_DUPFD_CLOEXEC, CInt(number)) == number)
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
