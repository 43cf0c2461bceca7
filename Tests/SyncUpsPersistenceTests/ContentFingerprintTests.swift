import SyncUpsPersistence
import SyncUpsTestSupport
import Testing

/// The fingerprint tells the store's own writes from other programs' edits, so any change of content must
/// change it: in every one of its four lanes and in the tail that does not fill a 32-byte block.
@Suite struct ContentFingerprintTests {
    @Test func changesWhenAnySingleByteChanges() {
        let original = (0..<77).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        let fingerprint = ContentFingerprint(original)
        #expect(ContentFingerprint(original) == fingerprint)
        for index in original.indices {
            var edited = original
            edited[index] ^= 0x01
            #expect(ContentFingerprint(edited) != fingerprint, "byte \(index) changed")
        }
    }

    @Test func changesWhenBytesMoveBetweenLanesOrTheLengthChanges() {
        let block = Array("abcdefghABCDEFGH01234567!@#$%^&*".utf8)
        let swapped = Array(block[8..<16] + block[0..<8] + block[16...])
        #expect(ContentFingerprint(block) != ContentFingerprint(swapped))
        // The same length, one byte different: in a full block, and in the tail that fills no block.
        #expect(ContentFingerprint(block) != ContentFingerprint(Array(block.dropLast()) + [0]))
        #expect(ContentFingerprint(block + [1]) != ContentFingerprint(block + [2]))
        #expect(ContentFingerprint(block) != ContentFingerprint(block + [0]))
        #expect(ContentFingerprint([]) != ContentFingerprint([0]))
    }

    @Test func fingerprintsPiecesAsTheirConcatenation() {
        var generator = SplitMix64.forTest()
        for _ in 0..<200 {
            let bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            var pieces: [[UInt8]] = []
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + Int.random(in: 0...70, using: &generator))
                pieces.append(Array(bytes[start..<end]))
                start = end
            }
            #expect(
                ContentFingerprint(pieces: pieces) == ContentFingerprint(bytes), "\(pieces.map(\.count)), \(generator)")
        }
    }
}
