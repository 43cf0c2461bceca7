// The speaker encoder's test and bench tooling (release-built by `make bench`; the reference check runs it).
//
//   syncups-voice embed WEIGHTS RAW...
//       Resemblyzer's utterance embedding of each file (16 kHz mono signed 16-bit little-endian), one line of
//       256 numbers each: what contrib/voice/reference.py compares with the Python implementation.
//   syncups-voice windows WEIGHTS RAW
//       The daemon's windows of one file (back-to-back 1.6 s partials): per line, the window's start in seconds
//       and its 256 numbers, or only the start where the window is silence: for studying thresholds offline.
//   syncups-voice cost WEIGHTS RAW
//       CPU seconds per second of audio at the daemon's cadence (one 1.6 s partial per 1.6 s of speech) and the
//       memory the model and its scratch add.
//   syncups-voice compare WEIGHTS DIR
//       GE2E against a weights-free alternative (statistics of mel cepstra) on the same fixtures, free of any
//       threshold: closed-set accuracy and the AUC of true-speaker cosines against all others.
//   syncups-voice attribution WEIGHTS DIR [--verbose]
//       The offline attribution bench on scripts/voice-fixtures' meetings: profiles learned from meeting1's floor,
//       then meeting2 and meeting3 attributed by the floor alone and by voice; the share of speech given to the
//       wrong speaker either way, and how much of the guests' speech was given to an attendee by voice; then
//       call2 (meeting2 as a remote stand-up with echo) heard as the mix and as two channels, and similar2 (the
//       attack's similar pair, espeak-ng en-us at pitch 40 and 60).

import Glibc
import SyncUpsPOSIX
import SyncUpsVoice

let arguments = Array(CommandLine.arguments.dropFirst())

func fail(_ message: String) -> Never {
    _ = Console.error("syncups-voice: \(message)\n")
    exit(2)
}

func readFile(_ path: String) -> [UInt8] {
    do {
        let (fd, _) = try FileDescriptor.openRegularFile(path)
        defer { fd.close() }
        return try fd.readToEnd()
    } catch {
        fail("\(error)")
    }
}

func samples(_ path: String) -> [Float] {
    VoiceStream.samples(pcm: readFile(path))
}

func loadModel(_ path: String) -> VoiceModel {
    do { return try VoiceModel(bytes: readFile(path)) } catch { fail("\(path): \(error)") }
}

func threadCPU() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func residentKiB() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss
}

switch arguments.first {
case "embed" where arguments.count >= 3:
    let encoder = VoiceEncoder(model: loadModel(arguments[1]))
    for path in arguments.dropFirst(2) {
        let embedding = encoder.embedUtterance(samples(path))
        _ = Console.out(embedding.map { String($0) }.joined(separator: " ") + "\n")
    }
case "windows" where arguments.count == 3:
    let stream = VoiceStream(encoder: VoiceEncoder(model: loadModel(arguments[1])))
    for window in stream.append(samples(arguments[2])[...]) {
        let start = String(Double(window.start) / Double(MelFrontend.sampleRate))
        _ = Console.out(([start] + (window.embedding ?? []).map { String($0) }).joined(separator: " ") + "\n")
    }
case "cost" where arguments.count == 3:
    let audio = samples(arguments[2])
    let before = residentKiB()
    let encoder = VoiceEncoder(model: loadModel(arguments[1]))
    let start = threadCPU()
    let stream = VoiceStream(encoder: encoder)
    var embeddings = 0
    var offset = 0
    while offset < audio.count {
        let end = min(audio.count, offset + 1600)
        embeddings += stream.append(audio[offset..<end]).count
        offset = end
    }
    let cpu = threadCPU() - start
    let seconds = Double(audio.count) / Double(MelFrontend.sampleRate)
    _ = Console.out(
        "audio \(seconds) s, \(embeddings) embeddings, CPU \(cpu) s, \(cpu / seconds) s per second, "
            + "max resident +\((residentKiB() - before) / 1024) MiB\n")
case "compare" where arguments.count == 3:
    compareEmbedders(encoder: VoiceEncoder(model: loadModel(arguments[1])), directory: arguments[2])
case "attribution" where arguments.count >= 3:
    attributionBench(
        encoder: VoiceEncoder(model: loadModel(arguments[1])), directory: arguments[2],
        verbose: arguments.contains("--verbose"))
default:
    fail(
        "usage: syncups-voice embed WEIGHTS RAW... | windows WEIGHTS RAW | cost WEIGHTS RAW | compare WEIGHTS DIR | attribution WEIGHTS DIR [--verbose]"
    )
}
