// The soak test (`make soak`): the release daemon under a steady, mixed load for a set time, and whether its
// memory, descriptors and threads stay flat once warmed up.
//
//   syncups-bench soak [--seconds N] [--json FILE] [--language-model]
//
// For N seconds (default 600): 50 clients send a paced mix of requests (SoakClient), 20 subscribers follow
// every topic (19 read every event and check that none is missing, one never reads and must be cut off),
// and meetings of three attendees run back to back with audio and PocketSphinx transcription, the
// microphone being ALSA's `file` plugin playing espeak-ng speech. Every 5 s the daemon's /proc is sampled.
// The report (a table on stdout, the same as JSON) ends with PASS or FAIL per check; the exit status is 1
// when one fails.

import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization

enum Soak {
    static let clientCount = 50
    /// All-topic subscribers, the stalled one included.
    static let subscriberCount = 20
    static let sampleInterval = 5
    /// The first fifth of the run warms up: the allocator's arenas, the store's writer thread, the first
    /// meeting's model load. Flatness is judged from its end to the end of the run.
    static let warmUpFraction = 0.2

    /// What the microphone says, one sentence per attendee, each in its own voice.
    static let sentences = [
        ("yesterday i finished the review", "en-us"),
        ("today i will deploy the service", "en-gb"),
        ("no blockers for me", "en-us+f3"),
    ]

    struct Options {
        var seconds = 600
        var jsonPath = ".build/bench/soak.json"
        /// PocketSphinx's full English language model instead of the stand-up grammar: the real workload,
        /// ~190 MB loaded per meeting and 4× the CPU; transcripts of synthetic speech are then approximate.
        var usesLanguageModel = false

        init(_ arguments: [String]) throws {
            var arguments = arguments
            while !arguments.isEmpty {
                let argument = arguments.removeFirst()
                switch argument {
                case "--seconds" where !arguments.isEmpty:
                    guard let value = Int(arguments.removeFirst()), value >= 10 else {
                        throw SoakFailure("--seconds takes a whole number of seconds, at least 10")
                    }
                    seconds = value
                case "--json" where !arguments.isEmpty: jsonPath = arguments.removeFirst()
                case "--language-model": usesLanguageModel = true
                default: throw SoakFailure("unknown argument \(argument)")
                }
            }
        }
    }

    /// Runs the soak; returns whether every check passed.
    static func main(_ options: Options) throws -> Bool {
        FileDescriptorLimit.raiseToHardLimit()
        signal(SIGPIPE, SIG_IGN)
        let warmUp = Double(options.seconds) * warmUpFraction
        print(
            "== Soak: \(options.seconds) s, \(clientCount) clients × \(SoakClient.requestsPerSecond) requests/s, \(subscriberCount) subscribers (1 stalled), \(MeetingController.meetingSeconds)-s meetings back to back; warm-up \(Int(warmUp)) s"
        )

        // The microphone: each attendee's sentence at the start of their ten seconds. Every meeting opens the
        // capture device anew, and the `file` plugin then reads its input file from the beginning again.
        let audio = try SpeechFixture.turns(sentences, slotSeconds: Double(MeetingController.meetingSeconds) / 3)
        let alsa = try ALSAFixture(microphone: audio)
        let grammar = SpeechFixture.writeGrammar(in: alsa.directory)
        let directory = TemporaryDirectory("soak")
        let logPath = directory.appending("daemon.log")
        let log = try FileDescriptor.open(logPath, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        var arguments = [
            "--socket", directory.appending("socket"), "--data-dir", directory.appending("data"), "--no-config",
            "--log-level", "notice", "--no-cue", "--audio-device", "virtmic", "--speech-engine", "pocketsphinx",
        ]
        if !options.usesLanguageModel { arguments += ["--speech-grammar", grammar] }
        let daemon: Daemon
        do {
            defer { log.close() }
            daemon = try Daemon(
                executable: productsDirectory + "/syncupsd", arguments: arguments,
                socketPath: directory.appending("socket"), directory: directory.path, environment: alsa.environment,
                standardError: .descriptor(log))
        }

        // The fixtures' directories (the microphone's file, the socket, the data) must outlive the daemon.
        let report = try withExtendedLifetime((alsa, directory)) {
            try load(daemon, options: options, warmUp: warmUp, logPath: logPath)
        }
        report.printMarkdown()

        let jsonDirectory = String(
            options.jsonPath[..<(options.jsonPath.lastIndex(of: "/") ?? options.jsonPath.startIndex)])
        if !jsonDirectory.isEmpty { createDirectories(jsonDirectory) }
        let json = try FileDescriptor.open(options.jsonPath, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        try json.writeAll(JSONWriter(options: JSONWriter.Options(isPretty: true)).encode(report.json) + [0x0A])
        json.close()
        // The daemon's log goes next to the JSON: its temporary directory is gone.
        let logCopy = (jsonDirectory.isEmpty ? "" : jsonDirectory + "/") + "soak-daemon.log"
        Files.write(logCopy, (report.log + report.logAfterRun).map { $0 + "\n" }.joined())
        print("\nJSON: \(options.jsonPath); the daemon's log: \(logCopy)")
        return report.passed
    }

    /// Puts `daemon` under the soak's load for `options.seconds`, stops it, and gathers what was seen.
    private static func load(_ daemon: Daemon, options: Options, warmUp: Double, logPath: String) throws
        -> SoakReport
    {
        let run = SoakRun(socketPath: daemon.socketPath)
        let collected = SoakCollected()
        var threads: [DedicatedThread] = []
        defer {
            // Also on the way out of an error: no thread outlives the soak, no daemon either.
            run.stop()
            for thread in threads { thread.join() }
            if run.daemonTermination == nil { daemon.stop() }
        }

        // Subscribers first, so they see every event of the load.
        for index in 0..<(subscriberCount - 1) {
            threads.append(
                try DedicatedThread(name: "soak-sub-\(index)") {
                    collected.subscribers.add(
                        SoakSubscriber.read(
                            index: index, socketPath: run.socketPath, subscribed: run.subscriberReady,
                            until: { run.isStopping }))
                })
        }
        threads.append(
            try DedicatedThread(name: "soak-stalled") {
                collected.stalled.add(
                    StalledSubscriber.stall(
                        socketPath: run.socketPath, start: run.start, subscribed: run.subscriberReady,
                        until: { run.isStopping }))
            })
        let readyBy = MonotonicInstant.now() + .seconds(10)
        while run.readySubscribers < subscriberCount && MonotonicInstant.now() < readyBy {
            sleep(until: MonotonicInstant.now() + .milliseconds(10))
        }

        // The load: the clock starts now.
        run.startLoad()
        let expectedTranscript = sentences.map(\.0).joined(separator: " ")
        threads.append(
            try DedicatedThread(name: "soak-meetings") {
                let controller = MeetingController(
                    socketPath: run.socketPath, start: run.start, board: run.meetings,
                    expectedTranscript: expectedTranscript)
                collected.meetings.add(controller.run(until: { run.isStopping }))
            })
        for index in 0..<clientCount {
            threads.append(
                try DedicatedThread(name: "soak-client-\(index)") {
                    collected.clients.add(SoakClient(index: index, run: run).run(until: { run.isStopping }))
                })
        }
        let seconds = options.seconds
        let sampler = try DedicatedThread(name: "soak-sampler") {
            collected.samples.add(
                SoakSampler.sample(
                    daemon: daemon, run: run, seconds: seconds, warmUp: warmUp, interval: sampleInterval))
        }
        sampler.join()

        // What the daemon logged until now happened under load; what follows, while everyone disconnects.
        var logInfo = stat()
        let logLengthAtEnd = stat(logPath, &logInfo) == 0 ? Int(logInfo.st_size) : 0
        run.stop()
        for thread in threads { thread.join() }
        threads = []

        // Everyone has gone: what the daemon holds with no client at all, for the record.
        sleep(until: MonotonicInstant.now() + .seconds(2))
        let after =
            run.daemonTermination == nil
            ? ProcessPoint(
                pid: daemon.pid, elapsed: (MonotonicInstant.now() - run.start).seconds, connections: nil,
                requests: run.requestCount) : nil
        let termination = run.daemonTermination ?? daemon.stop()
        run.daemonEnded(termination)

        let logBytes = Files.read(logPath) ?? []
        func lines(_ bytes: ArraySlice<UInt8>) -> [String] {
            String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        return SoakReport(
            seconds: options.seconds,
            warmUp: warmUp,
            model: options.usesLanguageModel ? "language model" : "stand-up grammar",
            sampling: collected.samples.all.first ?? SoakSampler.Result(),
            after: after,
            clients: collected.clients.all,
            subscribers: collected.subscribers.all.sorted { $0.index < $1.index },
            stalled: collected.stalled.all.first ?? StalledSubscriber.Result(),
            meetings: collected.meetings.all.first ?? MeetingController.Result(),
            daemonTermination: termination,
            daemonEndedAt: run.daemonEndedAt,
            log: lines(logBytes.prefix(logLengthAtEnd)),
            logAfterRun: lines(logBytes.dropFirst(logLengthAtEnd))
        )
    }

    static func print(_ text: String) { Console.out(text + "\n") }

    /// `mkdir -p`.
    static func createDirectories(_ path: String) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component + "/"
            mkdir(prefix, 0o755)
        }
    }
}

/// What the soak's threads share: the stop flag, the clock, counters, and the meeting board.
final class SoakRun: Sendable {
    let socketPath: String
    let meetings = MeetingBoard()
    private let loadStart = Mutex(MonotonicInstant.now())
    private let stopping = Atomic(false)
    private let requests = Atomic(0)
    private let subscribed = Atomic(0)
    private let termination = Mutex<(Subprocess.Termination, Double?)?>(nil)

    init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// When the load started: the zero of every time in the report.
    var start: MonotonicInstant { loadStart.withLock { $0 } }
    func startLoad() { loadStart.withLock { $0 = .now() } }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }
    func stop() { stopping.store(true, ordering: .relaxed) }

    func countRequest() { requests.wrappingAdd(1, ordering: .relaxed) }
    var requestCount: Int { requests.load(ordering: .relaxed) }

    func subscriberReady() { subscribed.wrappingAdd(1, ordering: .relaxed) }
    var readySubscribers: Int { subscribed.load(ordering: .relaxed) }

    /// The daemon has exited: during the run (the sampler reaped it, `at` seconds in), which stops the run at
    /// once, or when stopped at the end (`at` nil).
    func daemonEnded(_ status: Subprocess.Termination, at elapsed: Double? = nil) {
        termination.withLock { $0 = $0 ?? (status, elapsed) }
        stop()
    }

    var daemonTermination: Subprocess.Termination? { termination.withLock { $0?.0 } }
    /// Seconds into the run when the daemon exited on its own; nil if it lasted until it was stopped.
    var daemonEndedAt: Double? { termination.withLock { $0?.1 } }
}

/// Results handed back by the soak's threads.
final class SoakCollected: Sendable {
    let clients = Collector<SoakClient.Result>()
    let subscribers = Collector<SoakSubscriber.Result>()
    let stalled = Collector<StalledSubscriber.Result>()
    let meetings = Collector<MeetingController.Result>()
    let samples = Collector<SoakSampler.Result>()
}

/// A list several threads append to.
final class Collector<Item: Sendable>: Sendable {
    private let items = Mutex<[Item]>([])

    func add(_ item: Item) { items.withLock { $0.append(item) } }
    var all: [Item] { items.withLock { $0 } }
}
