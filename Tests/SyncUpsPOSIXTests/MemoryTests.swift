import Glibc
import SyncUpsPOSIX
import Testing

@Suite struct MemoryTests {
    /// Whether glibc gave `block` a mapping of its own: the IS_MMAPPED bit of its chunk's size field, the
    /// word before the block (per block, so other tests allocating at the same time do not matter).
    static func isMappedSeparately(_ block: UnsafeMutableRawPointer) -> Bool {
        (block - MemoryLayout<Int>.size).load(as: Int.self) & 2 != 0
    }

    /// glibc's default raises its mmap threshold to the size of each big block freed, so the next block of
    /// that size comes from the heap and its pages stay when it is freed; with large blocks mapped
    /// separately, every one is its own mapping, unmapped when freed.
    @Test func bigBlocksStayMappedSeparatelyAfterOneIsFreed() throws {
        Memory.mapLargeBlocksSeparately()
        let size = 300 * 1024
        let first = try #require(malloc(size))
        #expect(Self.isMappedSeparately(first))
        free(first)
        let second = try #require(malloc(size))
        defer { free(second) }
        #expect(Self.isMappedSeparately(second), "the second block came from the heap")
    }
}
