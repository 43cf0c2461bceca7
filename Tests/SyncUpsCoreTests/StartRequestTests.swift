import Foundation
import SyncUpsCore
import SyncUpsTestSupport
import Testing

/// `session.start`'s rules, pure: which arguments go together, their defaults, what speech settings make of
/// them, and why a second meeting is refused.
@Suite struct StartRequestTests {
    let engine = StartRequest.Speech(hasRecognizer: true, isOff: false, hasSaidItIsOff: false)
    let off = StartRequest.Speech(hasRecognizer: false, isOff: true, hasSaidItIsOff: false)
    let missing = StartRequest.Speech(hasRecognizer: false, isOff: false, hasSaidItIsOff: false)

    /// Nothing given: audio, the call and a transcript.
    @Test func recordsTheCallAndTranscribesByDefault() throws {
        let request = try StartRequest.settle(audio: nil, transcribe: nil, call: nil, speech: engine)
        #expect(request.records && request.recordsCall && request.transcribes)
        #expect(request.warnings.isEmpty)
    }

    /// No audio: no transcript either, by default, and no engine is needed.
    @Test func noAudioMeansNoTranscriptByDefault() throws {
        let request = try StartRequest.settle(audio: false, transcribe: nil, call: nil, speech: missing)
        #expect(!request.records && !request.transcribes)
    }

    /// Speech recognition turned off: recorded without a transcript, said at the first start only.
    @Test func speechTurnedOffRecordsWithoutATranscriptAndSaysSoOnce() throws {
        let first = try StartRequest.settle(audio: nil, transcribe: nil, call: nil, speech: off)
        #expect(first.records && !first.transcribes)
        #expect(first.warnings == ["recording without a transcript: speech recognition is off (--speech-engine none)"])
        #expect(first.hasSaidTranscriptionIsOff)
        var again = off
        again.hasSaidItIsOff = first.hasSaidTranscriptionIsOff
        let second = try StartRequest.settle(audio: nil, transcribe: nil, call: nil, speech: again)
        #expect(!second.transcribes && second.warnings.isEmpty)
    }

    /// A transcript asked for outright is refused when there is no engine, turned off or missing.
    @Test func aTranscriptAskedForWithoutAnEngineIsRefused() {
        for speech in [off, missing] {
            #expect(throws: StartRequest.Refusal.self) {
                try StartRequest.settle(audio: nil, transcribe: true, call: nil, speech: speech)
            }
        }
        // Not turned off, just missing: the default asks for one too.
        #expect {
            try StartRequest.settle(audio: nil, transcribe: nil, call: nil, speech: missing)
        } throws: {
            guard case .speechUnavailable = $0 as? StartRequest.Refusal else { return false }
            return true
        }
    }

    /// A transcript or the call without audio are arguments that do not go together.
    @Test func aTranscriptOrTheCallWithoutAudioIsAnInvalidArgument() {
        #expect(
            throws: StartRequest.Refusal.invalidArgument(
                "transcribing needs audio: pass \"transcribe\": false with \"audio\": false")
        ) { try StartRequest.settle(audio: false, transcribe: true, call: nil, speech: engine) }
        #expect(
            throws: StartRequest.Refusal.invalidArgument(
                "recording the call needs audio: pass \"call\": false with \"audio\": false")
        ) { try StartRequest.settle(audio: false, transcribe: false, call: true, speech: engine) }
        #expect(throws: Never.self) {
            try StartRequest.settle(audio: false, transcribe: false, call: false, speech: engine)
        }
    }

    /// A second meeting is refused: one being recorded says to end it, one being saved to wait for the save.
    @Test func anotherMeetingIsRefusedDifferentlyWhileOneIsRecordedAndWhileItIsSaved() throws {
        var (machine, _) = SessionMachine.started(
            syncUp: .fixture(), meetingID: Meeting.ID(UUID(counting: 0)), startDate: Date(timeIntervalSince1970: 0),
            records: true, transcribes: false)
        #expect(StartRequest.refusal(whileRunning: machine).hasSuffix("end it first (session.end)"))
        _ = try machine.request(.end(.save))
        #expect(machine.pendingEnding != nil)
        #expect(StartRequest.refusal(whileRunning: machine).contains("is still being saved"))
    }
}
