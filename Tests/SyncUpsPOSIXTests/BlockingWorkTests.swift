import SyncUpsPOSIX
import Testing

/// Debug builds count blocking work done on an event loop's thread during a turn, and only there.
@Suite struct BlockingWorkTests {
    #if DEBUG
        @Test func aDirectoryListedInsideALoopsTurnIsCountedAndOneListedOutsideIsNot() throws {
            let loop = try EventLoop()
            let before = BlockingWork.callsOnLoopOnThisThread
            _ = try DirectoryListing.names(in: "/")
            #expect(BlockingWork.callsOnLoopOnThisThread == before)
            loop.execute { _ = try? DirectoryListing.names(in: "/") }
            loop.runOnce(timeoutMilliseconds: 0)
            #expect(BlockingWork.callsOnLoopOnThisThread == before + 1)
            loop.runOnce(timeoutMilliseconds: 0)
            _ = try DirectoryListing.names(in: "/")
            #expect(BlockingWork.callsOnLoopOnThisThread == before + 1)
        }
    #endif
}
