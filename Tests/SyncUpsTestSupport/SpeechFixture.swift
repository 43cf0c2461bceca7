import Glibc
import SyncUpsPOSIX

/// Test speech made on the spot with espeak-ng and sox: raw S16_LE, 16 kHz, mono, the daemon's format.
public enum SpeechFixture {
    /// `text` spoken by `voice` (an espeak-ng voice such as "en-us", "en-gb", "en-us+f3").
    public static func say(_ text: String, voice: String = "en-us", rate: Int = 150) throws -> [UInt8] {
        let directory = TemporaryDirectory("speech")
        let wav = directory.appending("speech.wav")
        let raw = directory.appending("speech.raw")
        let spoken = try CommandResult.run("espeak-ng", ["-v", voice, "-s", String(rate), "-w", wav, text])
        guard spoken.exitCode == 0 else { throw TestFailure("espeak-ng failed: \(spoken.standardError)") }
        let converted = try CommandResult.run(
            "sox",
            [wav, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", raw]
        )
        guard converted.exitCode == 0, let bytes = Files.read(raw) else {
            throw TestFailure("sox failed: \(converted.standardError)")
        }
        return bytes
    }

    /// `audio` without its quiet end (espeak-ng ends each phrase with ~0.4 s of near silence), so a test can
    /// set the pause after the last word exactly.
    public static func trimmingTrailingSilence(_ audio: [UInt8]) -> [UInt8] {
        var end = audio.count & ~1
        while end >= 2, abs(Int(Int16(bitPattern: UInt16(audio[end - 2]) | UInt16(audio[end - 1]) << 8))) < 328 {
            end -= 2  // under -40 dBFS
        }
        return Array(audio[..<end])
    }

    /// `seconds` of silence.
    public static func silence(seconds: Double) -> [UInt8] {
        [UInt8](repeating: 0, count: Int(seconds * 16_000) * 2)
    }

    /// A recognisable, non-repeating pattern (a slow ramp), for byte-exact capture checks.
    public static func pattern(seconds: Double) -> [UInt8] {
        let frames = Int(seconds * 16_000)
        var bytes = [UInt8]()
        bytes.reserveCapacity(frames * 2)
        for frame in 0..<frames {
            let value = UInt16(truncatingIfNeeded: frame &* 7 &+ frame / 1000)
            bytes.append(UInt8(value & 0xFF))
            bytes.append(UInt8(value >> 8))
        }
        return bytes
    }
}

extension SpeechFixture {
    /// A JSGF grammar of stand-up sentences: with it PocketSphinx transcribes espeak-ng speech exactly.
    public static let standupGrammar = """
        #JSGF V1.0;
        grammar standup;
        public <utterance> = <sentence>;
        <sentence> = yesterday i finished the review
                   | today i will deploy the service
                   | no blockers for me
                   | i am working on the report
                   | i need help with the tests
                   | we should meet after lunch;

        """

    /// Writes the grammar into `directory` and returns its path.
    public static func writeGrammar(in directory: TemporaryDirectory) -> String {
        let path = directory.appending("standup.gram")
        Files.write(path, standupGrammar)
        return path
    }

    /// Each `(sentence, voice)` spoken in its own slot of `slotSeconds`, after `lead` seconds of silence.
    public static func turns(_ turns: [(String, String)], slotSeconds: Double, lead: Double = 0.4) throws -> [UInt8] {
        var audio: [UInt8] = []
        for (sentence, voice) in turns {
            var slot = silence(seconds: lead) + (try say(sentence, voice: voice))
            let slotBytes = Int(slotSeconds * 16_000) * 2
            precondition(slot.count < slotBytes - 8000, "\"\(sentence)\" does not fit its slot")
            slot += [UInt8](repeating: 0, count: slotBytes - slot.count)
            audio += slot
        }
        return audio
    }
}
