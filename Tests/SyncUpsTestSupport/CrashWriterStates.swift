import SyncUpsCore

/// The states the crash writer (`syncups-testtool crash-writer`) cycles through; generation `g`'s size
/// depends on `g`, so a torn or mixed file can never equal any generation.
public enum CrashWriterStates {
    public static func state(_ generation: Int) -> [SyncUp] {
        (0..<(3 + generation % 4)).map { index in
            var syncUp = SyncUp.realistic(
                index: index, meetingCount: 2 + (generation + index) % 5, transcriptBytes: 900)
            syncUp.title = "generation \(generation) #\(index)"
            return syncUp
        }
    }

    /// The generation a state belongs to, from its first title.
    public static func generation(of syncUps: [SyncUp]) -> Int? {
        guard let title = syncUps.first?.title else { return nil }
        let words = title.split(separator: " ")
        return words.count >= 2 ? Int(words[1]) : nil
    }
}
