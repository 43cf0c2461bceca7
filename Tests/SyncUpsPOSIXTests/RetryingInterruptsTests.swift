import Glibc
import SyncUpsPOSIX
import Testing

@Suite struct RetryingInterruptsTests {
    @Test func retriesOnlyWhileTheCallIsInterrupted() {
        var calls = 0
        let result = retryingInterrupts { () -> CInt in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7 && calls == 3)

        calls = 0
        let failed = retryingInterrupts { () -> Int in
            calls += 1
            errno = EAGAIN
            return -1
        }
        #expect(failed == -1 && calls == 1 && errno == EAGAIN)
    }

    @Test func syscallThrowsTheErrorThatIsNotAnInterruption() {
        var calls = 0
        #expect(throws: SystemError("read", .noSpace)) {
            try syscall("read") { () -> Int in
                calls += 1
                errno = calls == 1 ? EINTR : ENOSPC
                return -1
            }
        }
        #expect(calls == 2)
    }
}
