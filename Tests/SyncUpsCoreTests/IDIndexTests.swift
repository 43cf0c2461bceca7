import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// `IDIndex` answers exactly what a linear search of the ids answers, however the ids change.
@Suite struct IDIndexTests {
    /// The definition: an exact id first, then every id the text (upper-cased) begins.
    static func linear(_ text: String, in ids: [String]) -> IDPrefix.Resolution {
        IDPrefix.resolve(text, in: ids)
    }

    /// Ids over a small alphabet, so that prefixes are shared and ambiguity is common.
    static func randomID(_ generator: inout some RandomNumberGenerator) -> String {
        String((0..<8).map { _ in "AB01".randomElement(using: &generator)! })
    }

    @Test func answersAsALinearSearchDoesThroughAppendsAndRemovals() {
        var generator = SplitMix64(seed: 7)
        var ids = (0..<300).map { _ in Self.randomID(&generator) }
        var index = IDIndex(ids)
        for round in 0..<400 {
            if round % 3 == 0, !ids.isEmpty {
                let position = Int.random(in: 0..<ids.count, using: &generator)
                ids.remove(at: position)
                index.remove(at: position)
            } else {
                let id = Self.randomID(&generator)
                ids.append(id)
                index.append(id)
            }
            #expect(index.ids == ids)
            let probe = Self.randomID(&generator)
            for length in [2, 4, 5, 8] {
                let text = String(probe.prefix(length)).lowercased()
                #expect(index.resolve(text) == Self.linear(text, in: ids), "\(text) after round \(round)")
            }
            let existing = ids.randomElement(using: &generator) ?? "none"
            #expect(index.resolve(existing) == Self.linear(existing, in: ids))
        }
    }

    @Test func findsAFullIDAmongThirtyThousandAndEveryMatchOfAPrefix() {
        var generator = SplitMix64(seed: 11)
        let ids = (0..<30_000).map { _ in
            String((0..<36).map { _ in "0123456789ABCDEF".randomElement(using: &generator)! })
        }
        let index = IDIndex(ids)
        #expect(index.resolve(ids[29_999]) == .found(29_999))
        #expect(index.resolve(String(ids[12_345].prefix(12))) == .found(12_345))
        #expect(index.resolve("0") == .tooShort)
        #expect(index.resolve("00") == Self.linear("00", in: ids))
        #expect(index.resolve("abc") == .tooShort)
        #expect(index.resolve("ABCD") == Self.linear("ABCD", in: ids))
    }
}
