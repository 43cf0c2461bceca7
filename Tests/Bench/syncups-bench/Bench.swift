// syncups-bench: the figures of `make bench`, printed as a table and written as JSON.
//
//   syncups-bench [--quick] [--json FILE]
//       [--only roundtrip,limit,instructions,bigreplies,fanout,store,scale,flood,startup,idle,speech,callaudio,mpris]
//       [--speech-command COMMAND]
//   syncups-bench soak [--seconds N] [--json FILE] [--language-model]      (make soak; see Soak.swift)
//
// Request round trips are measured against syncupsd and MPD in the same run with the same client code,
// interleaved; everything else against syncupsd alone. Run the release build (make bench does).

import Glibc
import SyncUpsJSON
import SyncUpsPOSIX

@main
struct Bench {
    static func main() throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "speech-child" {
            try speechChild(Array(arguments.dropFirst()))
            return
        }
        if arguments.first == "soak" {
            let options: Soak.Options
            do {
                options = try Soak.Options(Array(arguments.dropFirst()))
            } catch {
                Console.error("\(error)\nusage: syncups-bench soak [--seconds N] [--json FILE] [--language-model]\n")
                exit(64)
            }
            do {
                exit(try Soak.main(options) ? 0 : 1)
            } catch {
                Console.error("syncups-bench soak: \(error)\n")
                exit(1)
            }
        }
        var quick = false
        var jsonPath = ".build/bench/results.json"
        var only: Set<String> = [
            "roundtrip", "instructions", "bigreplies", "fanout", "store", "scale", "flood", "startup", "idle", "speech",
            "callaudio",
            "mpris",
        ]
        var speechCommand: String?
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            switch argument {
            case "--quick": quick = true
            case "--json": jsonPath = arguments.removeFirst()
            case "--only": only = Set(arguments.removeFirst().split(separator: ",").map(String.init))
            case "--speech-command": speechCommand = arguments.removeFirst()
            default:
                Console.error(
                    "usage: syncups-bench [--quick] [--json FILE] [--only SECTIONS] [--speech-command COMMAND]\n")
                exit(64)
            }
        }
        FileDescriptorLimit.raiseToHardLimit()
        signal(SIGPIPE, SIG_IGN)
        var report = JSONObject()
        let scale = quick ? 0.2 : 1.0
        let repeats = quick ? 1 : 3

        if only.contains("roundtrip") { report.append("roundTrip", try roundTrips(scale: scale, rounds: repeats)) }
        if only.contains("roundtrip") || only.contains("limit") {
            report.append("limit", try limit(scale: scale, rounds: repeats))
        }
        if only.contains("instructions") { report.append("instructions", try instructions()) }
        if only.contains("bigreplies") { report.append("bigReplies", try bigReplies(seconds: quick ? 4 : 12)) }
        if only.contains("fanout") { report.append("fanOut", try fanOut(rounds: quick ? 20 : 100)) }
        if only.contains("store") { report.append("store", try store(repeats: repeats)) }
        if only.contains("scale") { report.append("scale", try scaling(quick: quick)) }
        if only.contains("flood") { report.append("flood", try flood(seconds: quick ? 5 : 20)) }
        if only.contains("startup") { report.append("startToReady", try startup(repeats: quick ? 3 : 7)) }
        if only.contains("idle") { report.append("activity", try activity(seconds: quick ? 3 : 10)) }
        if only.contains("speech") { report.append("speech", try speech(command: speechCommand)) }
        if only.contains("callaudio") { report.append("callAudio", try CallAudioBench.run()) }
        if only.contains("mpris") { report.append("mpris", try BusBench.run(rounds: quick ? 50 : 300)) }

        mkdir(".build", 0o755)
        mkdir(".build/bench", 0o755)
        let fd = try FileDescriptor.open(jsonPath, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        try fd.writeAll(JSONWriter(options: JSONWriter.Options(isPretty: true)).encode(.object(report)) + [0x0A])
        fd.close()
        print("\nJSON: \(jsonPath)")
    }

    static func print(_ text: String) { Console.out(text + "\n") }

    // MARK: - Sections

    static func roundTrips(scale: Double, rounds: Int) throws -> JSONValue {
        print("== Request round trips (syncupsd vs MPD, same client, \(rounds) interleaved rounds, medians)")
        var syncupsStatus: [RoundTripResult] = []
        var syncupsPing: [RoundTripResult] = []
        var mpdStatus: [RoundTripResult] = []
        for _ in 0..<rounds {
            let syncupsd = try Daemon.syncupsd()
            syncupsStatus.append(
                try RoundTrip.measure(path: syncupsd.socketPath, dialect: .syncupsd, command: "status", scale: scale))
            syncupsPing.append(
                try RoundTrip.measure(path: syncupsd.socketPath, dialect: .syncupsd, command: "ping", scale: scale))
            syncupsd.stop()
            let mpd = try Daemon.mpd()
            mpdStatus.append(
                try RoundTrip.measure(path: mpd.socketPath, dialect: .mpd, command: "status", scale: scale))
            mpd.stop()
        }
        func summary(_ results: [RoundTripResult]) -> (
            p50: Double, p99: Double, pipelined: Double, c50: Double, c99: Double, cps: Double
        ) {
            (
                median(results.map(\.sequentialP50)), median(results.map(\.sequentialP99)),
                median(results.map(\.pipelinedPerSecond)), median(results.map(\.concurrentP50)),
                median(results.map(\.concurrentP99)), median(results.map(\.concurrentPerSecond))
            )
        }
        let status = summary(syncupsStatus)
        let ping = summary(syncupsPing)
        let mpd = summary(mpdStatus)
        print("| | p50 | p99 | pipelined req/s | 50 clients p50 | 50 clients p99 | 50 clients req/s |")
        print("|---|---|---|---|---|---|---|")
        for (name, value) in [("syncupsd status", status), ("syncupsd ping", ping), ("MPD status", mpd)] {
            print(
                "| \(name) | \(microseconds(value.p50)) | \(microseconds(value.p99)) | \(Int(value.pipelined)) | \(microseconds(value.c50)) | \(microseconds(value.c99)) | \(Int(value.cps)) |"
            )
        }
        let p50Ratio = status.p50 / mpd.p50
        let throughputRatio = status.pipelined / mpd.pipelined
        print(
            "syncupsd/MPD status: p50 ×\(String(format2: p50Ratio)) (target ≤ 0.75), pipelined ×\(String(format2: throughputRatio)) (target ≥ 1)"
        )
        func json(_ value: (p50: Double, p99: Double, pipelined: Double, c50: Double, c99: Double, cps: Double))
            -> JSONValue
        {
            [
                "p50Microseconds": .double(value.p50 / 1000), "p99Microseconds": .double(value.p99 / 1000),
                "pipelinedPerSecond": .double(value.pipelined), "concurrentP50Microseconds": .double(value.c50 / 1000),
                "concurrentP99Microseconds": .double(value.c99 / 1000), "concurrentPerSecond": .double(value.cps),
            ]
        }
        return [
            "syncupsdStatus": json(status), "syncupsdPing": json(ping), "mpdStatus": json(mpd),
            "statusP50Ratio": .double(p50Ratio), "pipelinedRatio": .double(throughputRatio),
        ]
    }

    static func limit(scale: Double, rounds: Int) throws -> JSONValue {
        let tool = try LimitBench.build()
        // 200,000 requests a run when pipelined (at B=64, 20,000 took about 10 ms, and runs of the same server
        // varied by ±30 %), and at least 40 batches at every depth; round trips one at a time: 20,000.
        func total(_ batch: Int) -> Int { batch == 1 ? 20_000 : max(200_000, 40 * batch) }
        let probe = try Daemon.syncupsd()
        let replyBytes = try LimitBench.statusReplyBytes(probe.socketPath)
        probe.stop()
        print(
            "\n== Against the limit: a C epoll server answering each line with a fixed \(replyBytes)-byte line (syncupsd's"
        )
        print("   status reply); a C client writes B status requests, then reads the B replies, \(total(8)) requests")
        print("   (\(total(1)) at B=1); round trips one at a time;")
        // Each server on CPU 0, the clients on CPU 1: unpinned, where the scheduler put the two processes
        // moved one server's throughput between rounds by ×0.6 to ×2.2 (B=64, 7 rounds on a quiet machine);
        // pinned, by ±10 %. All four servers get the same placement.
        let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        let isPinned = cpus >= 2 && LimitBench.pinThisProcess(to: "1")
        let wrapper = isPinned ? ["taskset", "-c", "0"] : []
        print(
            "   medians of \(rounds) interleaved rounds; ×: the ratio to the limit; "
                + (isPinned ? "servers on CPU 0, clients on CPU 1" : "not pinned to CPUs"))
        let names = ["limit", "syncupsd", "syncupsd --busy-poll 0", "MPD"]
        var rates = [String: [Int: [Double]]]()
        var p50s = [String: [Double]]()
        let sequential = Int(20_000 * scale)
        for _ in 0..<rounds {
            let daemons = [
                try LimitBench.server(tool, replyBytes: replyBytes, wrapper: wrapper),
                try Daemon.syncupsd(wrapper: wrapper), try Daemon.syncupsd(["--busy-poll", "0"], wrapper: wrapper),
                try Daemon.mpd(wrapper: wrapper),
            ]
            defer { for daemon in daemons { daemon.stop() } }
            for (name, daemon) in zip(names, daemons) {
                let dialect: LineClient.Dialect = name == "MPD" ? .mpd : .syncupsd
                p50s[name, default: []].append(
                    try LimitBench.roundTripP50(daemon.socketPath, dialect: dialect, count: sequential))
            }
            for batch in LimitBench.batches {
                for (name, daemon) in zip(names, daemons) {
                    let dialect: LineClient.Dialect = name == "MPD" ? .mpd : .syncupsd
                    rates[name, default: [:]][batch, default: []].append(
                        try LimitBench.throughput(
                            tool, socketPath: daemon.socketPath, dialect: dialect, batch: batch, total: total(batch)))
                }
            }
        }
        let limitP50 = median(p50s["limit"] ?? [])
        print("| | p50 | " + LimitBench.batches.map { "B=\($0)" }.joined(separator: " | ") + " |")
        print("|---|---|" + String(repeating: "---|", count: LimitBench.batches.count))
        var results = JSONObject()
        for name in names {
            let p50 = median(p50s[name] ?? [])
            var cells = ["\(microseconds(p50)) (×\(String(format2: p50 / limitP50)))"]
            var object = JSONObject()
            object.append("p50Microseconds", .double(p50 / 1000))
            object.append("p50Ratio", .double(p50 / limitP50))
            for batch in LimitBench.batches {
                let rate = median(rates[name]?[batch] ?? [])
                let ratio = rate / median(rates["limit"]?[batch] ?? [])
                cells.append("\(String(format2: rate / 1e6)) M/s (×\(String(format2: ratio)))")
                object.append("B\(batch)PerSecond", .double(rate))
                object.append("B\(batch)Ratio", .double(ratio))
            }
            let label = name == "MPD" ? "MPD status (its own, shorter reply)" : name
            print("| \(label) | " + cells.joined(separator: " | ") + " |")
            results.append(name, .object(object))
        }
        results.append("replyBytes", .int(replyBytes))
        results.append("pinned", .bool(isPinned))
        if isPinned { _ = LimitBench.pinThisProcess(to: "0-\(cpus - 1)") }

        print("\n== The busy poll's cost: a client pinging in a loop for \(String(format1: 5 * scale)) s")
        print("| syncupsd | pings/s | daemon CPU per ping | daemon CPU |")
        print("|---|---|---|---|")
        for (name, key, arguments) in [
            ("--busy-poll 50 (default)", "pingBusyPoll", [String]()),
            ("--busy-poll 0", "pingNoBusyPoll", ["--busy-poll", "0"]),
        ] {
            let daemon = try Daemon.syncupsd(arguments)
            let cost = try LimitBench.pingCost(daemon, seconds: 5 * scale)
            daemon.stop()
            print(
                "| \(name) | \(Int(cost.pingsPerSecond)) | \(microseconds(cost.cpuPerPing)) | \(String(format1: cost.cpuPercent)) % |"
            )
            results.append(
                key,
                [
                    "pingsPerSecond": .double(cost.pingsPerSecond),
                    "cpuMicrosecondsPerPing": .double(cost.cpuPerPing / 1000), "cpuPercent": .double(cost.cpuPercent),
                ])
        }
        return .object(results)
    }

    static func instructions() throws -> JSONValue {
        print(
            "\n== Instructions per status request (valgrind callgrind, \(Instructions.requests) pipelined; repeatable)")
        guard Instructions.isAvailable else {
            print("valgrind is not installed; skipped")
            return .null
        }
        let syncupsd = try Instructions.perStatusRequest({ try Daemon.syncupsd(wrapper: $0) }, dialect: .syncupsd)
        let mpd = try Instructions.perStatusRequest({ try Daemon.mpd(wrapper: $0) }, dialect: .mpd)
        print("| | instructions per status |")
        print("|---|---|")
        print("| syncupsd | \(Int(syncupsd)) |")
        print("| MPD | \(Int(mpd)) |")
        print("syncupsd/MPD: ×\(String(format2: syncupsd / mpd))")
        return ["syncupsd": .double(syncupsd), "mpd": .double(mpd), "ratio": .double(syncupsd / mpd)]
    }

    static func bigReplies(seconds: Int) throws -> JSONValue {
        print("\n== Big replies and the meeting's ticks: N clients each keep 4 syncups.list pages (100 sync-ups)")
        print("   in flight for \(seconds) s while a meeting runs; how late its ticks reach a subscriber (against the")
        print("   earliest), and another client's ping round trip")
        print("| clients | reply | replies/s | tick late p50 | max | ping p50 | p99 |")
        print("|---|---|---|---|---|---|---|")
        var results = JSONObject()
        for clients in [1, 4] {
            let result = try BigReplyBench.measure(clients: clients, depth: 4, seconds: seconds)
            let rate = Double(result.replies) / result.seconds
            print(
                "| \(clients) | \(result.replyBytes / 1024) KiB | \(Int(rate)) | \(milliseconds(result.tickLateness.p50)) | \(milliseconds(result.tickLateness.max)) | \(milliseconds(result.pings.p50)) | \(milliseconds(result.pings.p99)) |"
            )
            results.append(
                String(clients),
                [
                    "replyBytes": .int(result.replyBytes), "repliesPerSecond": .double(rate),
                    "ticks": .int(result.tickLateness.count),
                    "tickLatenessp50Milliseconds": .double(result.tickLateness.p50 / 1e6),
                    "tickLatenessMaxMilliseconds": .double(result.tickLateness.max / 1e6),
                    "pingp50Milliseconds": .double(result.pings.p50 / 1e6),
                    "pingp99Milliseconds": .double(result.pings.p99 / 1e6),
                ])
        }
        return .object(results)
    }

    static func fanOut(rounds: Int) throws -> JSONValue {
        print("\n== Event fan-out: a change until the last of N subscribers has read it (\(rounds) changes)")
        print("| subscribers | p50 | p99 |")
        print("|---|---|---|")
        var results = JSONObject()
        for count in [1, 100, 1000] {
            let daemon = try Daemon.syncupsd(["--max-connections", "2000"])
            let samples = try FanOut.measure(socketPath: daemon.socketPath, subscribers: count, rounds: rounds)
            daemon.stop()
            print("| \(count) | \(milliseconds(samples.p50)) | \(milliseconds(samples.p99)) |")
            results.append(
                String(count),
                ["p50Milliseconds": .double(samples.p50 / 1e6), "p99Milliseconds": .double(samples.p99 / 1e6)])
        }
        return .object(results)
    }

    static func store(repeats: Int) throws -> JSONValue {
        print("\n== sync-ups.json: save as the store's writer threads do it (encode what changed, write and put in")
        print("   place, fingerprint; then fsync the file and the directory); load (read + decode); medians.")
        print("   \"save\" follows one new meeting, until the new file is in place (what a killed daemon keeps);")
        print("   \"durable\" until its fsyncs are done too. \"first save\" and \"full encode\" encode every")
        print("   sync-up, as the first save after start-up does. Freeing the version before .prev follows each save.")
        print("   \"read back\": reading and fingerprinting the file, what the event loop does for a file the")
        print("   store did not write itself (an outside edit, a copy); its own writes are known by identity.")
        print("| sync-ups | size | full encode | first save | save | durable | save per MB | read back | load |")
        print("|---|---|---|---|---|---|---|---|---|")
        var results = JSONObject()
        for count in [100, 1_000, 10_000] {
            let result = try StoreBench.measure(count: count, repeats: repeats)
            let megabytes = Double(result.bytes) / 1_048_576
            print(
                "| \(count) | \(String(format1: megabytes)) MB | \(milliseconds(result.encode)) | \(milliseconds(result.firstSave)) | \(milliseconds(result.save)) | \(milliseconds(result.durableSave)) | \(milliseconds(result.save / megabytes)) | \(milliseconds(result.readBack)) | \(milliseconds(result.load)) |"
            )
            results.append(
                String(count),
                [
                    "bytes": .int(result.bytes), "encodeMilliseconds": .double(result.encode / 1e6),
                    "firstSaveMilliseconds": .double(result.firstSave / 1e6),
                    "saveMilliseconds": .double(result.save / 1e6),
                    "durableSaveMilliseconds": .double(result.durableSave / 1e6),
                    "readBackMilliseconds": .double(result.readBack / 1e6),
                    "loadMilliseconds": .double(result.load / 1e6),
                ]
            )
        }
        return .object(results)
    }

    static func scaling(quick: Bool) throws -> JSONValue {
        let requests = quick ? 200 : 2000
        print("\n== Lookups as sync-ups grow (\(requests) of each on one connection; syncups.list pages of 10)")
        print("   and start to ready (median of 3) and resident memory once idle, with those sync-ups")
        print(
            "| sync-ups | get by id p50 | p99 | get by prefix p50 | p99 | list page p50 | start to ready | idle RSS |")
        print("|---|---|---|---|---|---|---|---|")
        var results = JSONObject()
        var lookups: [ScaleBench.Lookups] = []
        for count in [10, 1_000, 30_000] {
            let result = try ScaleBench.lookups(count: count, requests: requests)
            lookups.append(result)
            print(
                "| \(count) | \(microseconds(result.byID.p50)) | \(microseconds(result.byID.p99)) | \(microseconds(result.byPrefix.p50)) | \(microseconds(result.byPrefix.p99)) | \(microseconds(result.listPage.p50)) | \(milliseconds(result.startToReady)) | \(result.idleResidentKiB / 1024) MB |"
            )
            results.append(
                String(count),
                [
                    "getByIDp50Microseconds": .double(result.byID.p50 / 1e3),
                    "getByIDp99Microseconds": .double(result.byID.p99 / 1e3),
                    "getByPrefixp50Microseconds": .double(result.byPrefix.p50 / 1e3),
                    "getByPrefixp99Microseconds": .double(result.byPrefix.p99 / 1e3),
                    "listPagep50Microseconds": .double(result.listPage.p50 / 1e3),
                    "startToReadyMilliseconds": .double(result.startToReady / 1e6),
                    "idleResidentKiB": .int(result.idleResidentKiB),
                ])
        }
        if let small = lookups.first, let large = lookups.last {
            let ratios = [
                large.byID.p50 / small.byID.p50, large.byPrefix.p50 / small.byPrefix.p50,
                large.listPage.p50 / small.listPage.p50,
            ]
            print(
                "30,000/10 p50: get by id ×\(String(format2: ratios[0])), by prefix ×\(String(format2: ratios[1])), list page ×\(String(format2: ratios[2])) (target ≤ 2)"
            )
            results.append(
                "ratios",
                ["getByID": .double(ratios[0]), "getByPrefix": .double(ratios[1]), "listPage": .double(ratios[2])])
        }
        let megabytes = quick ? 20 : 100
        print("\n== An outside edit of a \(megabytes) MB sync-ups.json while a client pings in a loop, 10 subscribers")
        let edit = try ScaleBench.outsideEdit(megabytes: megabytes, subscribers: 10)
        print("| file | pings | ping p50 | p99 | max | subscribers with the reload | until all had it |")
        print("|---|---|---|---|---|---|---|")
        print(
            "| \(String(format1: Double(edit.bytes) / 1_048_576)) MB | \(edit.pings.count) | \(microseconds(edit.pings.p50)) | \(milliseconds(edit.pings.p99)) | \(milliseconds(edit.pings.max)) | \(edit.subscribersLeft) of \(edit.subscribers) | \(String(format1: edit.reloadMilliseconds)) ms |"
        )
        results.append(
            "outsideEdit",
            [
                "bytes": .int(edit.bytes), "pings": .int(edit.pings.count),
                "pingp50Microseconds": .double(edit.pings.p50 / 1e3),
                "pingp99Milliseconds": .double(edit.pings.p99 / 1e6),
                "pingMaxMilliseconds": .double(edit.pings.max / 1e6),
                "subscribersWithReload": .int(edit.subscribersLeft), "subscribers": .int(edit.subscribers),
                "untilAllHadItMilliseconds": .double(edit.reloadMilliseconds),
            ])
        return .object(results)
    }

    static func flood(seconds: Int) throws -> JSONValue {
        print("\n== A speech command flooding its output for \(seconds) s while a client pings in a loop")
        print("| engine writes | pings | ping p50 | p99 | max | RSS before | peak RSS | save after the flood |")
        print("|---|---|---|---|---|---|---|---|")
        var results = JSONObject()
        for (name, engine) in try FloodBench.engines() {
            let result = try FloodBench.measure(engine: engine, seconds: seconds)
            print(
                "| \(name) | \(result.pings.count) | \(microseconds(result.pings.p50)) | \(milliseconds(result.pings.p99)) | \(milliseconds(result.pings.max)) | \(result.startKiB / 1024) MB | \(result.peakKiB / 1024) MB | \(String(format1: result.endedMilliseconds)) ms |"
            )
            results.append(
                name,
                [
                    "pings": .int(result.pings.count), "pingp50Microseconds": .double(result.pings.p50 / 1e3),
                    "pingp99Milliseconds": .double(result.pings.p99 / 1e6),
                    "pingMaxMilliseconds": .double(result.pings.max / 1e6),
                    "startResidentKiB": .int(result.startKiB), "peakResidentKiB": .int(result.peakKiB),
                    "saveMilliseconds": .double(result.endedMilliseconds),
                ])
        }
        return .object(results)
    }

    static func startup(repeats: Int) throws -> JSONValue {
        print("\n== Start to ready (exec until the socket answers with its greeting), medians")
        print("| sync-ups | start to ready |")
        print("|---|---|")
        var results = JSONObject()
        for count in [0, 100, 1_000, 10_000] {
            let directory = try StoreBench.dataDirectory(count: count)
            let time = try DaemonBench.startToReady(dataDirectory: directory, repeats: repeats)
            print("| \(count) | \(milliseconds(time)) |")
            results.append(String(count), .double(time / 1e6))
        }
        return .object(results)
    }

    static func activity(seconds: Int) throws -> JSONValue {
        print(
            "\n== The daemon alone (\(seconds) s each): resident memory, wake-ups (context switches of all threads), CPU"
        )
        let daemon = try Daemon.syncupsd(["--audio-device", "null"])
        defer { daemon.stop() }
        var pause = timespec(tv_sec: 1, tv_nsec: 0)
        nanosleep(&pause, nil)
        let idle = DaemonBench.observe(daemon, seconds: seconds)
        let meeting = try DaemonBench.meeting(daemon, seconds: seconds)
        print("| | RSS | wake-ups/s | CPU |")
        print("|---|---|---|---|")
        print(
            "| idle | \(idle.residentKiB / 1024) MB (\(idle.residentKiB) KiB) | \(String(format1: idle.wakeupsPerSecond)) | \(String(format2: idle.cpuPercent)) % |"
        )
        print(
            "| meeting, audio from ALSA null, no speech | \(meeting.residentKiB / 1024) MB | \(String(format1: meeting.wakeupsPerSecond)) | \(String(format2: meeting.cpuPercent)) % (\(String(format2: meeting.cpuPercent * 10)) ms CPU per meeting-second) |"
        )
        return [
            "idle": [
                "residentKiB": .int(idle.residentKiB), "wakeupsPerSecond": .double(idle.wakeupsPerSecond),
                "cpuPercent": .double(idle.cpuPercent),
            ],
            "meeting": [
                "residentKiB": .int(meeting.residentKiB), "wakeupsPerSecond": .double(meeting.wakeupsPerSecond),
                "cpuPercent": .double(meeting.cpuPercent),
                "cpuMillisecondsPerMeetingSecond": .double(meeting.cpuPercent * 10),
            ],
        ]
    }

    static func speech(command: String?) throws -> JSONValue {
        print("\n== Speech on recorded speech (pocketsphinx-testdata's LibriVox clips)")
        print("   Batch: the clips fed at once to the engine alone, in its own process.")
        print("   Live: syncupsd recording from ALSA (`file` plugin on a FIFO fed 100 ms every 100 ms), 2 s of silence")
        print("   around each clip; latencies per clip (median and worst) from the moment the audio went into the")
        print("   microphone to the session.transcript event on a subscriber's socket, from the onset and from the")
        print(
            "   end of the clip's speech (by level); live WER of the saved transcript; CPU per meeting-second of the")
        print(
            "   engine's processes (syncupsd's descendants: \"in process\" for PocketSphinx, whose CPU is syncupsd's),")
        print("   of syncupsd's own process, and of both")
        print(
            "| engine | audio | batch RTF | batch WER | first partial after speech starts | final after speech ends | live WER | CPU: engine | CPU: syncupsd | CPU: both | peak RSS |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        var results = JSONObject()
        var engines = [("pocketsphinx", nil as String?)]
        if let command { engines.append(("command", command)) }
        let cases = SpeechBench.LiveCase.all(clips: (try? SpeechBench.librivoxClips().count) ?? 0)
        var rows: [String] = []
        func latencies(_ values: [Double], of clips: Int) -> String {
            guard !values.isEmpty else { return "none" }
            return
                "\(String(format2: median(values))) s, worst \(String(format2: values.max() ?? 0)) s\(values.count < clips ? " (\(values.count) of \(clips) clips)" : "")"
        }
        func percent(_ value: Double) -> String { "\(String(format1: value * 100)) %" }
        func milliseconds(_ value: Double) -> String { "\(Int((value * 1000).rounded())) ms" }
        // The CPU per meeting-second: the engine's own, syncupsd's own, both.
        func cpu(_ live: SpeechBench.Live) -> String {
            "\(live.engineCPUSecondsPerMeetingSecond.map(milliseconds) ?? "in process") | \(milliseconds(live.daemonCPUSecondsPerMeetingSecond)) | \(milliseconds(live.cpuSecondsPerMeetingSecond))"
        }
        func cpuFields(_ live: SpeechBench.Live) -> [(String, JSONValue)] {
            [
                ("cpuSecondsPerMeetingSecond", .double(live.cpuSecondsPerMeetingSecond)),
                (
                    "engineCpuSecondsPerMeetingSecond",
                    live.engineCPUSecondsPerMeetingSecond.map(JSONValue.double) ?? .null
                ),
                ("daemonCpuSecondsPerMeetingSecond", .double(live.daemonCPUSecondsPerMeetingSecond)),
            ]
        }
        // A row of the second table, and for a warm case the start-up it leaves out (not hidden: paid before
        // each meeting).
        func caseRows(_ name: String, _ liveCase: SpeechBench.LiveCase, _ figures: SpeechBench.Live) -> [String] {
            var rows = [
                "| \(name) | \(liveCase.name) | \(figures.clips) | \(latencies(figures.partialLatencies, of: figures.clips)) | \(latencies(figures.finalLatencies, of: figures.clips)) | \(percent(figures.wordErrorRate)) | \(cpu(figures)) |"
            ]
            if !figures.spareStartCPUSeconds.isEmpty {
                rows.append(
                    "| \(name) | its engine's start ahead, per meeting (not in the row above) | \(figures.spareStartCPUSeconds.count) | | | | \(milliseconds(median(figures.spareStartCPUSeconds))) median, worst \(milliseconds(figures.spareStartCPUSeconds.max() ?? 0)) | | |"
                )
            }
            return rows
        }
        for (engine, command) in engines {
            let name = command.map { "command (\(($0.split(separator: "/").last).map(String.init) ?? $0))" } ?? engine
            // SYNCUPS_BENCH_SPEECH_CASES=meetingStart,meetingStartWarm: only those rows of the second table.
            if let only = getenv("SYNCUPS_BENCH_SPEECH_CASES").map({ String(cString: $0) }) {
                let keys = Set(only.split(separator: ",").map(String.init))
                for liveCase in cases where keys.contains(liveCase.key) && (!liveCase.warm || command != nil) {
                    rows += caseRows(
                        name, liveCase, try SpeechBench.live(engine: engine, command: command, liveCase: liveCase))
                }
                continue
            }
            var arguments = [engine]
            if let command { arguments.append(command) }
            let output = try CommandOutput.run(productsDirectory + "/syncups-bench", ["speech-child"] + arguments)
            guard let value = try? JSONParser().parse(output), case .object(var object) = value else {
                print("| \(engine) | failed: \(output.prefix(200)) |")
                continue
            }
            let live: SpeechBench.Live
            do {
                live = try SpeechBench.live(engine: engine, command: command, liveCase: cases[0])
            } catch {
                print("| \(name) | live run failed: \(error) |")
                continue
            }
            object.append("partialLatencySeconds", .array(live.partialLatencies.map(JSONValue.double)))
            object.append("finalLatencySeconds", .array(live.finalLatencies.map(JSONValue.double)))
            object.append("clips", .int(live.clips))
            object.append("liveWordErrorRate", .double(live.wordErrorRate))
            for (key, value) in cpuFields(live) { object.append(key, value) }
            object.append("livePeakResidentKiB", .int(live.peakResidentKiB))
            func number(_ key: String) -> Double { object[key]?.numberValue?.double ?? 0 }
            print(
                "| \(name) | \(String(format1: number("audioSeconds"))) s | \(String(format2: number("realTimeFactor"))) | \(percent(number("wordErrorRate"))) | \(latencies(live.partialLatencies, of: live.clips)) | \(latencies(live.finalLatencies, of: live.clips)) | \(percent(live.wordErrorRate)) | \(cpu(live)) | \(max(Int(number("peakResidentKiB")), live.peakResidentKiB) / 1024) MB |"
            )
            // The other moments an utterance comes at, each a row of the second table.
            var caseResults = JSONObject()
            // Only a command is started ahead of its meeting (PocketSphinx runs in syncupsd's process).
            for liveCase in cases.dropFirst() where !liveCase.warm || command != nil {
                let figures: SpeechBench.Live
                do {
                    figures = try SpeechBench.live(engine: engine, command: command, liveCase: liveCase)
                } catch {
                    rows.append("| \(name) | \(liveCase.name) | live run failed: \(error) |")
                    continue
                }
                var figuresObject: JSONObject = [
                    "partialLatencySeconds": .array(figures.partialLatencies.map(JSONValue.double)),
                    "finalLatencySeconds": .array(figures.finalLatencies.map(JSONValue.double)),
                    "clips": .int(figures.clips), "liveWordErrorRate": .double(figures.wordErrorRate),
                ]
                for (key, value) in cpuFields(figures) { figuresObject.append(key, value) }
                if !figures.spareStartCPUSeconds.isEmpty {
                    figuresObject.append(
                        "spareStartCpuSeconds", .array(figures.spareStartCPUSeconds.map(JSONValue.double)))
                }
                caseResults.append(liveCase.key, .object(figuresObject))
                rows += caseRows(name, liveCase, figures)
            }
            object.append("cases", .object(caseResults))
            results.append(engine, .object(object))
        }
        print(
            "\n   Live, the other moments an utterance comes at: in the first 2 s of a meeting (a meeting per clip, its"
        )
        print("   audio 1 s after the start; cold: the engine started with the meeting, as the first meeting after")
        print("   syncupsd starts; warm: started ahead, as after a meeting or a reminder, its start-up CPU on its own")
        print("   line, not in the row); after 10 s of a quiet room's noise")
        print(
            "   (-60 dBFS); right after a speaker turn (`session.next` when the clip's audio starts); a monologue (six"
        )
        print(
            "   clips cut to their speech, back to back, 25-30 s; a meeting each, from its first word and to its last)."
        )
        print("   Median and worst.")
        print(
            "| engine | case | clips | first partial after speech starts | final after speech ends | live WER | CPU: engine | CPU: syncupsd | CPU: both |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for row in rows { print(row) }
        return .object(results)
    }

    static func speechChild(_ arguments: [String]) throws {
        let result = try SpeechBench.run(
            engine: arguments.first ?? "pocketsphinx", command: arguments.dropFirst().first)
        var object = JSONObject()
        object.append("audioSeconds", .double(result.audioSeconds))
        object.append("realTimeFactor", .double(result.realTimeFactor))
        object.append("peakResidentKiB", .int(result.peakResidentKiB))
        object.append("words", .int(result.words))
        object.append("wordErrorRate", .double(result.wordErrorRate))
        Console.out(JSONWriter().string(.object(object)) + "\n")
    }
}

/// Runs a command and returns its standard output.
enum CommandOutput {
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = try Subprocess(
            executable: executable, arguments: arguments, standardInput: .null, standardOutput: .pipe,
            standardError: .null)
        let output = try process.standardOutput!.readToEnd()
        _ = process.wait()
        process.closeStreams()
        return String(decoding: output, as: UTF8.self)
    }
}
