import Glibc
import SyncUpsPOSIX
import Testing

@Suite struct DedicatedThreadTests {
    /// glibc's default thread stack: the stack limit (`ulimit -s`), 8 MiB unless someone changed it.
    static let stackSize: UInt64 = {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_STACK.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max
        else { return 8 << 20 }
        return UInt64(limit.rlim_cur)
    }()

    /// How many thread stacks the process has mapped: the read-write regions of the default stack size in
    /// /proc/self/maps. Other measures, like VmSize, move with malloc's per-thread arenas as other tests run.
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
            return bounds.count == 2 && bounds[1] - bounds[0] == stackSize
        }.count
    }

    /// Threads started and forgotten (speech engines, clean-up) must not keep their stacks once they end: an
    /// exited thread nobody joins or detaches keeps its 8 MiB stack mapped for the life of the process.
    @Test func freesTheStackOfAThreadNobodyJoins() throws {
        let done = try BlockingQueue<Int>(capacity: 1)
        // The count must see thread stacks at all, or the check below would pass with nothing counted. Twenty
        // live threads need more stacks than glibc keeps cached from threads that ended.
        let release = try BlockingQueue<Int>(capacity: 20)
        let idle = Self.mappedStacks()
        let alive = try (0..<20).map { _ in try DedicatedThread(name: "test-alive") { _ = release.pop() } }
        #expect(Self.mappedStacks() >= idle + 10, "live threads' stacks are among the regions counted")
        for _ in alive { release.push(0) }
        for thread in alive { thread.join() }
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

    /// `join` returns only once the body has returned (everything it did is visible), and a second `join`
    /// returns at once instead of joining a thread that no longer exists (undefined behaviour in glibc).
    @Test func joinWaitsForTheBodyAndASecondJoinReturnsAtOnce() throws {
        let release = try BlockingQueue<Int>(capacity: 1)
        let written = try BlockingQueue<Int>(capacity: 1000)
        let thread = try DedicatedThread(name: "test-join") {
            _ = release.pop()
            for value in 0..<1000 { _ = written.push(value) }
        }
        _ = release.push(0)
        thread.join()
        #expect(written.count == 1000, "join returned before the body did")
        // glibc gives the next thread the joined one's cached stack and descriptor: a second pthread_join of
        // the first would wait for that one, which waits here until the second join has returned.
        let hold = try BlockingQueue<Int>(capacity: 1)
        let next = try DedicatedThread(name: "test-next") { _ = hold.pop() }
        let joinedAgain = try WakeSignal()
        let joiner = try DedicatedThread(name: "test-rejoin") {
            thread.join()
            joinedAgain.signal()
        }
        let returned = joinedAgain.wait(timeout: .seconds(10))
        #expect(returned, "the second join waited for another thread")
        _ = hold.push(0)
        next.join()
        if returned { joiner.join() }  // else it may wait forever: left to itself
    }
}
