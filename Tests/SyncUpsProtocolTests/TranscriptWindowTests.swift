import SyncUpsProtocol
import Testing

/// Pieces of a transcript are cut only between scalars, so paging through it gives back every byte.
@Suite struct TranscriptWindowTests {
    static let text = (0..<400).map { ["yesterday", "Zoë", "❌", "東京", "👩‍👩‍👧", "ok"][$0 % 6] }.joined(separator: " ")

    @Test(arguments: [1, 2, 3, 5, 7, 64, 1000, 1 << 20])
    func pagingFromTheStartReassemblesTheTextExactly(limit: Int) {
        var pieces: [String] = []
        var offset: Int? = 0
        while let start = offset {
            let window = TranscriptWindow.page(of: Self.text, from: start, maxBytes: limit)
            #expect(window.offset == start)
            #expect(window.text.utf8.count <= max(limit, 4))
            #expect(!window.text.isEmpty)
            pieces.append(String(window.text))
            offset = window.next
        }
        #expect(pieces.joined() == Self.text)
        #expect(Array(pieces.joined().utf8) == Array(Self.text.utf8))
    }

    @Test func anOffsetInsideACharacterMovesBackToItsStart() {
        let text = "aé"  // "é" is two bytes, at 1 and 2
        let window = TranscriptWindow.page(of: text, from: 2, maxBytes: 10)
        #expect(window.offset == 1)
        #expect(window.text == "é")
        #expect(window.next == nil)
        #expect(TranscriptWindow.page(of: text, from: 99, maxBytes: 10).text == "")
    }

    @Test(arguments: [4, 5, 6, 100, 16_384])
    func theTailIsTheTextsEndWithinTheLimit(limit: Int) {
        let tail = TranscriptWindow.tail(of: Self.text, maxBytes: limit)
        #expect(tail.text.utf8.count <= limit)
        #expect(tail.text.utf8.count > min(limit, Self.text.utf8.count) - 4)
        #expect(Self.text.utf8.count == tail.offset + tail.text.utf8.count)
        #expect(Self.text.hasSuffix(tail.text))
        #expect(tail.next == nil)
        #expect(TranscriptWindow.tail(of: "tiny", maxBytes: limit).offset == 0)
    }
}
