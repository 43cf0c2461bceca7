import SyncUpsJSON
import SyncUpsPOSIX

/// What the soak saw, the checks made of it, and how it is shown: markdown on stdout, the same as JSON.
struct SoakReport {
    struct Check {
        var name: String
        var passed: Bool
        var detail: String
    }

    /// A value before and after, judged against a limit.
    struct Drift {
        var name: String
        var baseline: Double
        var final: Double
        var limit: Double

        var change: Double { final - baseline }
        var isWithinLimit: Bool { abs(change) <= limit }
        var json: JSONValue {
            [
                "baseline": .double(baseline), "final": .double(final), "change": .double(change),
                "limit": .double(limit),
            ]
        }
    }

    /// Growth of resident memory allowed from the end of the warm-up to the end: 2 MiB or 10 %.
    static let residentAllowanceKiB = 2048.0
    static let residentAllowanceFraction = 0.1
    /// Descriptors may differ by this much: at any instant the stalled subscriber may be between a cut-off
    /// and its next connection (one socket), and the store may hold a temporary file open while it writes
    /// `sync-ups.json`. Everything else (the clients' sockets; a meeting's capture device, input file,
    /// recording and eventfds) is the same at the same point of a meeting, and medians over a meeting's
    /// length compare like with like. A descriptor leaked per meeting or per connection passes it in minutes.
    static let descriptorTolerance = 2.0
    /// Threads may differ by one: a meeting's capture, recording or recognizer thread starting or ending at
    /// the moment of a sample.
    static let threadTolerance = 1.0
    /// Ticks are one second apart on the daemon's clock; what a subscriber sees may lag by scheduling on a
    /// busy machine, but not by half a second.
    static let longestTickInterval = 1.5
    /// The stalled subscriber must be cut off within this many seconds of subscribing: the time for its
    /// socket buffer to fill (a few seconds of events) plus the 10-s stall timeout, with room to spare.
    static let longestStall = 60.0

    let seconds: Int
    let warmUp: Double
    let model: String
    let sampling: SoakSampler.Result
    let after: ProcessPoint?
    let clients: [SoakClient.Result]
    let subscribers: [SoakSubscriber.Result]
    let stalled: StalledSubscriber.Result
    let meetings: MeetingController.Result
    let daemonTermination: Subprocess.Termination
    let daemonEndedAt: Double?
    /// The daemon's log (notice and above) while the load ran, and after, while everyone disconnected.
    let log: [String]
    let logAfterRun: [String]

    var points: [ProcessPoint] { sampling.points }

    // MARK: - Derived figures

    /// Medians over one meeting's length (or the warm-up, if shorter) ending at the end of the warm-up, and
    /// ending at the end of the run: a sample can fall anywhere in a meeting, but a meeting's worth of them
    /// is the same mix each time.
    var window: Double { min(Double(MeetingController.meetingSeconds), warmUp) }

    func windowMedian(endingAt end: Double, _ value: (ProcessPoint) -> Int) -> Double {
        let inside = points.filter { $0.elapsed > end - window - 0.001 && $0.elapsed <= end + 0.001 }
        return median(inside.map { Double(value($0)) })
    }

    var warmUpEnd: Double { points.first { $0.elapsed >= warmUp }?.elapsed ?? warmUp }
    var end: Double { points.last?.elapsed ?? Double(seconds) }

    var residentDrift: Drift {
        let baseline = windowMedian(endingAt: warmUpEnd, \.residentKiB)
        return Drift(
            name: "RSS", baseline: baseline, final: windowMedian(endingAt: end, \.residentKiB),
            limit: max(Self.residentAllowanceKiB, baseline * Self.residentAllowanceFraction))
    }

    var descriptorDrift: Drift {
        Drift(
            name: "descriptors", baseline: windowMedian(endingAt: warmUpEnd, \.descriptors),
            final: windowMedian(endingAt: end, \.descriptors), limit: Self.descriptorTolerance)
    }

    var threadDrift: Drift {
        Drift(
            name: "threads", baseline: windowMedian(endingAt: warmUpEnd, \.threads),
            final: windowMedian(endingAt: end, \.threads), limit: Self.threadTolerance)
    }

    /// Descriptors by target whose count differs between the end of the warm-up and the end.
    var descriptorChanges: [(target: String, change: Int)] {
        let targets = Set(sampling.descriptorsAfterWarmUp.keys).union(sampling.descriptorsAtEnd.keys)
        return targets.sorted().compactMap { target in
            let change = (sampling.descriptorsAtEnd[target] ?? 0) - (sampling.descriptorsAfterWarmUp[target] ?? 0)
            return change == 0 ? nil : (target, change)
        }
    }

    var latencies: [(name: String, samples: Samples)] {
        var all = Samples()
        var rows: [(String, Samples)] = []
        for kind in SoakClient.Kind.allCases {
            var samples = Samples()
            for client in clients { if let mine = client.latencies[kind] { samples.add(mine) } }
            all.add(samples)
            rows.append((kind.rawValue, samples))
        }
        return [("all", all)] + rows
    }

    /// The slowest requests of the run, one per moment: several clients waiting on the same stall of the
    /// daemon count once.
    var slowestRequests: [SoakClient.SlowRequest] {
        var moments: [SoakClient.SlowRequest] = []
        for request in clients.flatMap(\.slowest).sorted(by: { $0.nanoseconds > $1.nanoseconds })
        where !moments.contains(where: { abs($0.at - request.at) < 0.5 }) {
            moments.append(request)
        }
        return moments
    }

    var requestCount: Int { clients.reduce(0) { $0 + $1.latencies.values.reduce(0) { $0 + $1.count } } }
    var unexpectedErrors: Int { clients.reduce(0) { $0 + $1.unexpectedErrors } }
    var expectedErrors: Int { clients.reduce(0) { $0 + $1.expectedErrors } }
    var connectionFailures: Int { clients.reduce(0) { $0 + $1.connectionFailures } }
    var lateRequests: Int { clients.reduce(0) { $0 + $1.lateRequests } }

    var tickIntervals: Samples {
        var all = Samples()
        for subscriber in subscribers { all.add(subscriber.tickIntervals) }
        return all
    }

    var cutOffs: [Double] { stalled.cycles.compactMap(\.cutOffAfter) }

    /// Why the daemon closed connections during the run (or after it), from its `closing client N (pid P):
    /// reason` notices. After the run, a subscriber closing with events unread shows as a reset.
    func closingReasons(afterRun: Bool = false) -> [String: Int] {
        var reasons: [String: Int] = [:]
        for line in afterRun ? logAfterRun : log where line.hasPrefix("notice: closing client ") {
            let reason = line.firstRange(of: "): ").map { String(line[$0.upperBound...]) } ?? line
            reasons[reason, default: 0] += 1
        }
        return reasons
    }

    static func isStallCutOff(_ reason: String) -> Bool {
        reason.hasPrefix("it read nothing for") || reason.contains("bytes of output unread, over the")
    }

    var logProblems: [String] {
        (log + logAfterRun).filter { $0.hasPrefix("warning:") || $0.hasPrefix("error:") }
    }

    var errors: [String] {
        var errors = clients.flatMap(\.errors) + meetings.failures + meetings.sessionErrors
        errors += subscribers.compactMap { subscriber in
            subscriber.failure.map { "subscriber \(subscriber.index): \($0)" }
        }
        if let failure = stalled.failure { errors.append("stalled subscriber: \(failure)") }
        return errors + logProblems.map { "daemon log: \($0)" }
    }

    // MARK: - Checks

    var checks: [Check] {
        var checks: [Check] = []
        let daemonOK = daemonEndedAt == nil && daemonTermination == .exited(0)
        checks.append(
            Check(
                name: "daemon ran to the end and stopped cleanly", passed: daemonOK,
                detail: daemonEndedAt.map { "it \(daemonTermination) \(Int($0)) s into the run" }
                    ?? "on SIGTERM it \(daemonTermination)"))

        for drift in [residentDrift, descriptorDrift, threadDrift] {
            let isMemory = drift.name == "RSS"
            func show(_ value: Double) -> String { isMemory ? megabytes(value) : String(format1: value) }
            checks.append(
                Check(
                    name: "\(drift.name) flat after warm-up", passed: drift.isWithinLimit && !points.isEmpty,
                    detail:
                        "\(show(drift.baseline)) at \(Int(warmUpEnd)) s → \(show(drift.final)) at \(Int(end)) s (medians over \(Int(window)) s): \(drift.change >= 0 ? "+" : "−")\(show(abs(drift.change))), limit ±\(show(drift.limit))"
                ))
        }

        checks.append(
            Check(
                name: "requests answered without error",
                passed: unexpectedErrors == 0 && connectionFailures == 0 && requestCount > 0,
                detail:
                    "\(requestCount) requests, \(unexpectedErrors) unexpected errors, \(connectionFailures) connection failures (\(expectedErrors) expected not_found for the controller's deleted sync-ups)"
            ))

        let missing = subscribers.reduce(0) { $0 + $1.missing }
        let disordered = subscribers.reduce(0) { $0 + $1.outOfOrder }
        let dropped = subscribers.filter { $0.failure != nil }.count
        let fewest = subscribers.map(\.events).min() ?? 0
        checks.append(
            Check(
                name: "every subscriber got every event, in order",
                passed: subscribers.count == Soak.subscriberCount - 1 && missing == 0 && disordered == 0
                    && dropped == 0 && fewest > 0,
                detail:
                    "\(subscribers.count) subscribers, \(fewest)–\(subscribers.map(\.events).max() ?? 0) events each, \(missing) missing, \(disordered) out of order, \(dropped) disconnected"
            ))

        let lastCycleLength = stalled.cycles.last.flatMap { $0.cutOffAfter == nil ? end - $0.subscribedAt : nil } ?? 0
        let longest = max(cutOffs.max() ?? 0, lastCycleLength)
        checks.append(
            Check(
                name: "the stalled subscriber was cut off, every time",
                passed: !cutOffs.isEmpty && longest <= Self.longestStall && stalled.failure == nil,
                detail:
                    "cut off \(cutOffs.count)×, \(String(format1: cutOffs.min() ?? 0))–\(String(format1: cutOffs.max() ?? 0)) s after subscribing (limit \(Int(Self.longestStall)) s); daemon said: \(closingReasons().map { "\($0.value) × \($0.key)" }.sorted().joined(separator: "; "))"
            ))

        let ticks = tickIntervals
        let skipped = subscribers.reduce(0) { $0 + $1.skippedSeconds }
        checks.append(
            Check(
                name: "meeting ticks every second",
                passed: ticks.count > 0 && ticks.max / 1e9 <= Self.longestTickInterval && skipped == 0,
                detail:
                    "\(ticks.count) tick intervals seen: p50 \(milliseconds(ticks.p50)), p99 \(milliseconds(ticks.p99)), longest \(milliseconds(ticks.max)) (limit \(Self.longestTickInterval) s); \(skipped) skipped seconds"
            ))

        let shortAudio = meetings.audioSeconds.filter { $0 < Double(MeetingController.meetingSeconds) - 1 }.count
        checks.append(
            Check(
                name: "meetings back to back, saved with transcripts",
                passed: meetings.completed > 0 && meetings.failures.isEmpty && meetings.sessionErrors.isEmpty
                    && meetings.nonEmptyTranscripts == meetings.completed && shortAudio == 0
                    && meetings.completed + meetings.discardedAtEnd == meetings.started,
                detail:
                    "\(meetings.completed) of \(meetings.started) completed (\(meetings.discardedAtEnd) cut short by the end of the run), \(meetings.nonEmptyTranscripts) with a transcript (\(meetings.exactTranscripts) word for word), \(shortAudio) with short audio, \(meetings.sessionErrors.count) session errors, \(meetings.failures.count) failures"
            ))

        // The stalled subscriber is cut off for reading nothing for the stall timeout, or for passing the output
        // limit first; any other connection closed by the daemon during the run is a problem.
        let otherCutOffs = closingReasons().filter { !Self.isStallCutOff($0.key) }
        checks.append(
            Check(
                name: "daemon log: no warnings, errors, or cut-offs but the stalled subscriber's",
                passed: logProblems.isEmpty && otherCutOffs.isEmpty,
                detail:
                    "\(log.count + logAfterRun.count) lines at notice and above, \(logProblems.count) warnings or errors, \(otherCutOffs.values.reduce(0, +)) other cut-offs during the run; after it: \(closingReasons(afterRun: true).map { "\($0.value) × \($0.key)" }.sorted().joined(separator: "; "))"
            ))
        return checks
    }

    var passed: Bool { checks.allSatisfy(\.passed) }

    // MARK: - Markdown

    /// One row per tenth of the run (in whole samples), plus the end of the warm-up.
    var tableRows: [ProcessPoint] {
        let every = max(
            Soak.sampleInterval, (seconds / 10 + Soak.sampleInterval - 1) / Soak.sampleInterval * Soak.sampleInterval)
        return points.filter { point in
            Int(point.elapsed) % every == 0 || point.elapsed == warmUpEnd || point.elapsed == end
        }
    }

    func printMarkdown() {
        let print = Soak.print
        print("\n== The daemon over time (/proc every \(Soak.sampleInterval) s; speech: PocketSphinx, \(model))")
        print("| time | RSS | descriptors | threads | connections | daemon CPU | requests/s |")
        print("|---|---|---|---|---|---|---|")
        var previous: ProcessPoint?
        for point in tableRows {
            let span = previous.map { point.elapsed - $0.elapsed } ?? 0
            let cpu =
                previous.map { span > 0 ? String(format1: (point.cpuSeconds - $0.cpuSeconds) / span * 100) + " %" : "" }
                ?? ""
            let rate = previous.map { span > 0 ? String(Int(Double(point.requests - $0.requests) / span)) : "" } ?? ""
            let label = "\(Int(point.elapsed)) s" + (point.elapsed == warmUpEnd ? " (warm-up ends)" : "")
            print(
                "| \(label) | \(megabytes(Double(point.residentKiB))) | \(point.descriptors) | \(point.threads) | \(point.connections.map(String.init) ?? "?") | \(cpu) | \(rate) |"
            )
            previous = point
        }
        if let after {
            print(
                "| after, no clients | \(megabytes(Double(after.residentKiB))) | \(after.descriptors) | \(after.threads) | 0 | | |"
            )
        }
        let changes = descriptorChanges
        print(
            "Descriptors by target, end of warm-up → end: "
                + (changes.isEmpty
                    ? "no change"
                    : changes.map { "\($0.change > 0 ? "+" : "")\($0.change) \($0.target)" }.joined(separator: ", ")))

        print(
            "\n== Request latency (\(Soak.clientCount) clients × \(SoakClient.requestsPerSecond) requests/s; \(lateRequests) requests late on schedule)"
        )
        print("| request | count | p50 | p99 | max |")
        print("|---|---|---|---|---|")
        for (name, samples) in latencies where samples.count > 0 {
            print(
                "| \(name) | \(samples.count) | \(microseconds(samples.p50)) | \(microseconds(samples.p99)) | \(milliseconds(samples.max)) |"
            )
        }
        print(
            "Slowest: "
                + slowestRequests.prefix(5).map {
                    "\(milliseconds(Double($0.nanoseconds))) (\($0.kind.rawValue)) at \(String(format1: $0.at)) s"
                }.joined(separator: ", ")
                + "; meetings started at "
                + meetings.startTimes.map { String(format1: $0) }.joined(separator: ", ") + " s")

        print("\n== Subscribers (all topics)")
        print("| subscriber | events | missing | out of order | ticks | longest tick interval | ended early |")
        print("|---|---|---|---|---|---|---|")
        for subscriber in subscribers {
            print(
                "| \(subscriber.index + 1) | \(subscriber.events) | \(subscriber.missing) | \(subscriber.outOfOrder) | \(subscriber.ticks) | \(milliseconds(subscriber.tickIntervals.max)) | \(subscriber.failure ?? "no") |"
            )
        }
        let unread = stalled.cycles.filter { $0.cutOffAfter != nil }.map(\.unreadBytes)
        print(
            "| \(Soak.subscriberCount) (stalled) | never read | | | | | cut off \(cutOffs.count)× after \(String(format1: cutOffs.min() ?? 0))–\(String(format1: cutOffs.max() ?? 0)) s, with \((unread.min() ?? 0) / 1024)–\((unread.max() ?? 0) / 1024) KiB unread in its socket |"
        )

        print(
            "\n== Meetings (\(MeetingController.meetingSeconds) s, \(MeetingController.attendees.count) attendees, audio + transcription)"
        )
        print(
            "\(meetings.completed) completed of \(meetings.started) started; lengths \(String(format1: meetings.lengths.min() ?? 0))–\(String(format1: meetings.lengths.max() ?? 0)) s; audio \(String(format1: meetings.audioSeconds.min() ?? 0))–\(String(format1: meetings.audioSeconds.max() ?? 0)) s; transcripts: \(meetings.nonEmptyTranscripts) non-empty, \(meetings.exactTranscripts) word for word"
        )

        let errors = errors
        print("\n== Errors: \(errors.isEmpty ? "none" : String(errors.count))")
        for error in errors.prefix(30) { print("- \(error)") }

        print("\n== Checks")
        for check in checks { print("\(check.passed ? "PASS" : "FAIL") \(check.name): \(check.detail)") }
        print(passed ? "\nsoak: PASS" : "\nsoak: FAIL")
    }

    // MARK: - JSON

    var json: JSONValue {
        var object = JSONObject()
        object.append(
            "configuration",
            [
                "seconds": .int(seconds), "warmUpSeconds": .double(warmUp), "clients": .int(Soak.clientCount),
                "requestsPerClientPerSecond": .int(SoakClient.requestsPerSecond),
                "subscribers": .int(Soak.subscriberCount), "meetingSeconds": .int(MeetingController.meetingSeconds),
                "speechModel": .string(model), "sampleIntervalSeconds": .int(Soak.sampleInterval),
            ])
        object.append("samples", .array(points.map(\.json)))
        object.append("afterClientsLeft", after?.json ?? .null)
        object.append(
            "flatness",
            [
                "windowSeconds": .double(window), "warmUpEndSeconds": .double(warmUpEnd), "endSeconds": .double(end),
                "residentKiB": residentDrift.json, "descriptors": descriptorDrift.json, "threads": threadDrift.json,
                "descriptorChanges": .object(
                    JSONObject(descriptorChanges.map { JSONObject.Member(key: $0.target, value: .int($0.change)) })),
            ])
        var latency = JSONObject()
        for (name, samples) in latencies where samples.count > 0 {
            latency.append(
                name,
                [
                    "count": .int(samples.count), "p50Microseconds": .double(samples.p50 / 1000),
                    "p99Microseconds": .double(samples.p99 / 1000), "maxMicroseconds": .double(samples.max / 1000),
                ])
        }
        object.append("latency", .object(latency))
        object.append(
            "slowestRequests",
            .array(
                slowestRequests.prefix(10).map {
                    [
                        "atSeconds": .double($0.at), "request": .string($0.kind.rawValue),
                        "milliseconds": .double(Double($0.nanoseconds) / 1e6),
                    ]
                }))
        object.append(
            "requests",
            [
                "count": .int(requestCount), "unexpectedErrors": .int(unexpectedErrors),
                "expectedErrors": .int(expectedErrors), "connectionFailures": .int(connectionFailures),
                "late": .int(lateRequests),
            ])
        object.append(
            "subscribers",
            .array(
                subscribers.map { subscriber in
                    [
                        "events": .int(subscriber.events), "missing": .int(subscriber.missing),
                        "outOfOrder": .int(subscriber.outOfOrder), "ticks": .int(subscriber.ticks),
                        "longestTickIntervalMilliseconds": .double(subscriber.tickIntervals.max / 1e6),
                        "skippedSeconds": .int(subscriber.skippedSeconds), "failure": .optional(subscriber.failure),
                    ]
                }))
        object.append(
            "stalledSubscriber",
            [
                "cycles": .array(
                    stalled.cycles.map { cycle in
                        [
                            "subscribedAtSeconds": .double(cycle.subscribedAt),
                            "cutOffAfterSeconds": cycle.cutOffAfter.map(JSONValue.double) ?? .null,
                            "unreadBytes": .int(cycle.unreadBytes),
                        ]
                    }),
                "closingReasons": .object(
                    JSONObject(
                        closingReasons().sorted { $0.key < $1.key }.map {
                            JSONObject.Member(key: $0.key, value: .int($0.value))
                        })),
            ])
        object.append(
            "eventGaps",
            [
                "tickIntervals": .int(tickIntervals.count), "p50Milliseconds": .double(tickIntervals.p50 / 1e6),
                "p99Milliseconds": .double(tickIntervals.p99 / 1e6),
                "maxMilliseconds": .double(tickIntervals.max / 1e6),
            ])
        object.append(
            "meetings",
            [
                "started": .int(meetings.started), "completed": .int(meetings.completed),
                "nonEmptyTranscripts": .int(meetings.nonEmptyTranscripts),
                "exactTranscripts": .int(meetings.exactTranscripts), "discardedAtEnd": .int(meetings.discardedAtEnd),
                "startTimesSeconds": .array(meetings.startTimes.map(JSONValue.double)),
                "lengthsSeconds": .array(meetings.lengths.map(JSONValue.double)),
                "audioSeconds": .array(meetings.audioSeconds.map(JSONValue.double)),
            ])
        object.append(
            "daemon",
            [
                "termination": .string(daemonTermination.description),
                "log": .array(log.map(JSONValue.string)), "logAfterRun": .array(logAfterRun.map(JSONValue.string)),
            ])
        object.append("errors", .array(errors.map(JSONValue.string)))
        object.append(
            "checks",
            .array(
                checks.map { ["name": .string($0.name), "passed": .bool($0.passed), "detail": .string($0.detail)] }))
        object.append("passed", .bool(passed))
        return .object(object)
    }
}

func megabytes(_ kibibytes: Double) -> String { String(format1: kibibytes / 1024) + " MB" }
