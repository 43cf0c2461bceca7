import Glibc
import SyncUpsPOSIX
import Testing

@Suite struct DedicatedThreadTests {
    /// How many thread stacks the process has mapped: the 8 MiB read-write regions in /proc/self/maps (the
    /// default stack size). Other measures, like VmSize, move with malloc's per-thread arenas as other tests run.
    static func mappedStacks() -> Int {
        let fd = open("/proc/self/maps", O_RDONLY)
        defer { close(fd) }
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while case let count = read(fd, &buffer, buffer.count), count > 0 { text += buffer[0..<count] }
        return String(decoding: text, as: UTF8.self).split(separator: "\n").filter { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 2, fields[1] == "rw-p" else { return false }
            let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            return bounds.count == 2 && bounds[1] - bounds[0] == 8 << 20
        }.count
    }

    /// Threads started and forgotten (speech engines, clean-up) must not keep their stacks once they end: an
    /// exited thread nobody joins or detaches keeps its 8 MiB stack mapped for the life of the process.
    @Test func freesTheStackOfAThreadNobodyJoins() throws {
        let done = try BlockingQueue<Int>(capacity: 1)
        let before = Self.mappedStacks()
        for number in 0..<200 {
            _ = try DedicatedThread(name: "test-forgotten") { _ = done.push(number) }
            #expect(done.pop() == number)
        }
        // Detached, their stacks go back to glibc's cache and are reused: a few stay mapped, plus whatever
        // threads other tests have running (forgotten without detaching, all 200 stay mapped).
        let added = Self.mappedStacks() - before
        #expect(added < 100, "200 forgotten threads left \(added) more stacks mapped")
    }

    @Test func joiningTwiceIsHarmless() throws {
        let thread = try DedicatedThread(name: "test-join") {}
        thread.join()
        thread.join()
    }
}
