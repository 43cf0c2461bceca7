import Glibc
import SyncUpsAudio
import Testing

/// An audio error says whose call failed and describes it in that library's words.
@Suite struct AudioErrorTests {
    @Test func eachSourceDescribesItsCodeInItsOwnWords() {
        #expect(AudioError(.system, operation: "eventfd", code: -EMFILE).description == "eventfd: Too many open files")
        #expect(
            AudioError(.alsa, operation: "snd_pcm_open(nothing)", code: -ENOENT).description
                == "snd_pcm_open(nothing): No such file or directory")
        let pulse = AudioError(
            .pulseAudio, operation: "connecting to the sound server", code: -ECONNREFUSED,
            message: "Connection refused")
        #expect(pulse.description == "connecting to the sound server: Connection refused")
        #expect(pulse.source == .pulseAudio)
    }
}
