import SyncUpsPOSIX
import SyncUpsVoice

/// "start end name" lines.
struct Interval {
    var start: Double
    var end: Double
    var name: String
}

func intervals(_ path: String) -> [Interval] {
    String(decoding: readFile(path), as: UTF8.self).split(separator: "\n").map { line in
        let fields = line.split(separator: " ")
        guard fields.count == 3, let start = Double(fields[0]), let end = Double(fields[1]) else {
            fail("\(path): bad line \(line)")
        }
        return Interval(start: start, end: end, name: String(fields[2]))
    }
}

func who(_ intervals: [Interval], at time: Double) -> String? {
    intervals.last { $0.start <= time && time < $0.end }?.name
}

struct Meeting {
    var name: String
    var truth: [Interval]
    var floor: [Interval]
    var windows: [VoiceWindow]

    static let rate = Double(MelFrontend.sampleRate)

    init(directory: String, name: String, encoder: VoiceEncoder) {
        self.name = name
        truth = intervals(FilePath.join(directory, name + ".truth"))
        floor = intervals(FilePath.join(directory, name + ".floor"))
        let audio = samples(FilePath.join(directory, name + ".raw"))
        windows = VoiceStream(encoder: encoder).append(audio[...])
    }

    func holder(of window: VoiceWindow) -> String? {
        who(floor, at: (Double(window.start) + Double(window.count) / 2) / Self.rate)
    }
}

func attributionBench(encoder: VoiceEncoder, directory: String, verbose: Bool) {
    let matcher = VoiceMatcher()
    let attendees: Set<String> = ["ann", "ben", "cat"]
    var profiles: [String: VoiceProfile] = [:]
    let training = Meeting(directory: directory, name: "meeting1", encoder: encoder)
    for window in training.windows {
        guard let embedding = window.embedding, let holder = training.holder(of: window) else { continue }
        matcher.learn(embedding, seconds: Double(window.count) / Meeting.rate, holder: holder, at: 0, into: &profiles)
    }
    for (id, profile) in profiles.sorted(by: { $0.key < $1.key }) {
        _ = Console.out("profile \(id): \(profile.seconds) s learned from meeting1's floor\n")
    }
    var totals = (speech: 0.0, floorWrong: 0.0, voiceWrong: 0.0, guest: 0.0, guestNamed: 0.0)
    for name in ["meeting2", "meeting3"] {
        let meeting = Meeting(directory: directory, name: name, encoder: encoder)
        var speech = 0.0
        var floorWrong = 0.0
        var voiceWrong = 0.0
        var guest = 0.0
        var guestNamed = 0.0
        for window in meeting.windows {
            let holder = meeting.holder(of: window)
            let decision = matcher.decide(window.embedding, floor: holder, profiles)
            if verbose {
                let scores = window.embedding.map { matcher.scores($0, profiles) } ?? []
                let text = scores.map { "\($0.id) \(String($0.score).prefix(5))" }.joined(separator: ", ")
                let truth = who(meeting.truth, at: (Double(window.start) + Double(window.count) / 2) / Meeting.rate)
                _ = Console.out(
                    "\(name) \(Double(window.start) / Meeting.rate) s floor \(holder ?? "-") truth \(truth ?? "-"): \(decision) [\(text)]\n"
                )
            }
            // Scored every 10 ms of true speech.
            var sample = window.start
            while sample < window.start + window.count {
                defer { sample += 160 }
                let time = Double(sample) / Meeting.rate
                guard let speaker = who(meeting.truth, at: time) else { continue }
                let floorHolder = who(meeting.floor, at: time)
                let byVoice: String? =
                    switch decision {
                    case .voice(let id, _): id
                    case .unknown: "guest"
                    case .floor: floorHolder
                    }
                let isGuest = !attendees.contains(speaker)
                speech += 0.01
                if floorHolder != speaker { floorWrong += 0.01 }
                if isGuest ? byVoice != "guest" : byVoice != speaker { voiceWrong += 0.01 }
                if isGuest {
                    guest += 0.01
                    if case .voice = decision { guestNamed += 0.01 }
                }
            }
        }
        _ = Console.out(
            "\(name): \(format(speech)) s of speech; misattributed by the floor \(percent(floorWrong, speech)), "
                + "by voice \(percent(voiceWrong, speech)); guests' speech named by voice \(percent(guestNamed, guest))\n"
        )
        totals.speech += speech
        totals.floorWrong += floorWrong
        totals.voiceWrong += voiceWrong
        totals.guest += guest
        totals.guestNamed += guestNamed
    }
    _ = Console.out(
        "overall: misattributed by the floor \(percent(totals.floorWrong, totals.speech)), by voice "
            + "\(percent(totals.voiceWrong, totals.speech)); guest false acceptance \(percent(totals.guestNamed, totals.guest))\n"
    )
}

func format(_ value: Double) -> String { String((value * 10).rounded() / 10) }

func percent(_ part: Double, _ whole: Double) -> String {
    whole > 0 ? format(100 * part / whole) + " %" : "-"
}
