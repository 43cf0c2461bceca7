import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport

/// One of the soak's request clients: a blocking connection issuing a paced, seeded mix of requests and
/// timing each one, the way a status bar, a script or `syncupsctl` would use the daemon.
///
/// The mix, per 100 requests: 10 `ping`, 15 `status`, 5 `themes.list`, 10 `syncups.list` (a page of 25),
/// 20 `syncups.get` (one of the client's own sync-ups, or the one being recorded), 10 `meetings.get` (the
/// last saved meeting), 10 `session.get`, and 20 changes to the client's own sync-ups (`syncups.create`,
/// `syncups.update`, `syncups.delete`, keeping one to three of them), each of which the daemon publishes to
/// every subscriber.
final class SoakClient {
    /// Requests each client sends a second, on a fixed schedule: 50 clients make 1000 requests a second,
    /// about a third of what `make bench` measures the daemon answering on these 2 cores, so the soak
    /// measures a steady state, not a saturated daemon.
    static let requestsPerSecond = 20

    enum Kind: String, CaseIterable, Sendable {
        case ping
        case status
        case themesList = "themes.list"
        case syncUpsList = "syncups.list"
        case syncUpsGet = "syncups.get"
        case meetingsGet = "meetings.get"
        case sessionGet = "session.get"
        case syncUpsCreate = "syncups.create"
        case syncUpsUpdate = "syncups.update"
        case syncUpsDelete = "syncups.delete"
    }

    /// What one client saw.
    struct Result: Sendable {
        var latencies: [Kind: Samples] = [:]
        /// `not_found` for a sync-up or meeting of the meeting controller's, which it may just have deleted.
        var expectedErrors = 0
        var unexpectedErrors = 0
        var connectionFailures = 0
        /// Times a request was not answered before the next was due, so the schedule slipped.
        var lateRequests = 0
        /// The first few unexpected errors, for the report.
        var errors: [String] = []
        /// The client's three slowest requests, to see when the daemon was slow and what it was doing.
        var slowest: [SlowRequest] = []

        mutating func record(_ error: String) {
            if errors.count < 5 { errors.append(error) }
        }

        mutating func record(_ request: SlowRequest) {
            guard slowest.count < 3 || request.nanoseconds > slowest[2].nanoseconds else { return }
            slowest.append(request)
            slowest.sort { $0.nanoseconds > $1.nanoseconds }
            if slowest.count > 3 { slowest.removeLast() }
        }
    }

    struct SlowRequest: Sendable {
        /// Seconds into the run when it was sent.
        var at: Double
        var kind: Kind
        var nanoseconds: Int64
    }

    private let index: Int
    private let run: SoakRun
    private var random: SplitMix64
    private var result = Result()
    private var connection: LineConnection?
    private var requestID = 0
    /// The client's own sync-ups, oldest first, and how many it has made.
    private var own: [String] = []
    private var created = 0

    init(index: Int, run: SoakRun) {
        self.index = index
        self.run = run
        random = SplitMix64(seed: UInt64(index + 1))
    }

    /// Sends requests on schedule until the run stops.
    func run(until stop: () -> Bool) -> Result {
        let interval = Duration.nanoseconds(1_000_000_000 / Int64(Self.requestsPerSecond))
        // Spread the clients over the interval so that they do not all send at the same instant.
        var next = MonotonicInstant.now() + .nanoseconds(interval.nanoseconds * Int64(index) / 50)
        while !stop() {
            sleep(until: next)
            next = next + interval
            if MonotonicInstant.now() > next {
                result.lateRequests += 1
                next = MonotonicInstant.now() + interval
            }
            guard let connection = connected() else {
                sleep(until: MonotonicInstant.now() + .seconds(1))
                continue
            }
            let (kind, line) = nextRequest()
            let start = MonotonicInstant.now()
            let reply: [UInt8]
            do {
                reply = try connection.request(line)
            } catch {
                result.connectionFailures += 1
                result.record("client \(index): \(kind.rawValue): \(error)")
                self.connection = nil
                continue
            }
            let latency = MonotonicInstant.now() - start
            result.latencies[kind, default: Samples()].add(latency)
            result.record(SlowRequest(at: (start - run.start).seconds, kind: kind, nanoseconds: latency.nanoseconds))
            run.countRequest()
            handle(reply, to: kind)
        }
        connection = nil
        return result
    }

    private func connected() -> LineConnection? {
        if let connection { return connection }
        do {
            connection = try LineConnection(path: run.socketPath)
        } catch {
            result.connectionFailures += 1
            result.record("client \(index): connect: \(error)")
        }
        return connection
    }

    // MARK: - The mix

    private func nextRequest() -> (Kind, String) {
        requestID += 1
        let id = requestID
        let roll = Int.random(in: 0..<100, using: &random)
        let kind: Kind =
            switch roll {
            case 0..<10: .ping
            case 10..<25: .status
            case 25..<30: .themesList
            case 30..<40: .syncUpsList
            case 40..<60: .syncUpsGet
            case 60..<70: .meetingsGet
            case 70..<80: .sessionGet
            default: change()
            }
        switch kind {
        case .ping, .status, .themesList, .sessionGet:
            return (kind, #"{"id":\#(id),"cmd":"\#(kind.rawValue)"}"#)
        case .syncUpsList:
            let offset = Int.random(in: 0..<100, using: &random)
            return (kind, #"{"id":\#(id),"cmd":"syncups.list","args":{"offset":\#(offset),"limit":25}}"#)
        case .syncUpsGet:
            let recorded = run.meetings.current?.syncUp
            guard let target = Bool.random(using: &random) ? recorded ?? own.last : own.last ?? recorded else {
                return (.status, #"{"id":\#(id),"cmd":"status"}"#)
            }
            return (kind, #"{"id":\#(id),"cmd":"syncups.get","args":{"id":"\#(target)","meetingsLimit":5}}"#)
        case .meetingsGet:
            guard let saved = run.meetings.lastSaved else { return (.ping, #"{"id":\#(id),"cmd":"ping"}"#) }
            return (
                kind,
                #"{"id":\#(id),"cmd":"meetings.get","args":{"syncup":"\#(saved.syncUp)","meeting":"\#(saved.meeting)"}}"#
            )
        case .syncUpsCreate:
            created += 1
            let attendees = (0..<Int.random(in: 1...5, using: &random)).map { #""Attendee \#($0 + 1)""# }
            let theme = Self.themes.randomElement(using: &random)!
            let duration = Int.random(in: 60...900, using: &random)
            return (
                kind,
                #"{"id":\#(id),"cmd":"syncups.create","args":{"title":"Client \#(index) sync-up \#(created)","duration":\#(duration),"theme":"\#(theme)","attendees":[\#(attendees.joined(separator: ","))]}}"#
            )
        case .syncUpsUpdate:
            let target = own.randomElement(using: &random)!
            let title = "Client \(index) sync-up, edit \(id)"
            return (
                kind,
                Bool.random(using: &random)
                    ? #"{"id":\#(id),"cmd":"syncups.update","args":{"id":"\#(target)","title":"\#(title)"}}"#
                    : #"{"id":\#(id),"cmd":"syncups.update","args":{"id":"\#(target)","title":"\#(title)","duration":\#(Int.random(in: 60...900, using: &random)),"theme":"\#(Self.themes.randomElement(using: &random)!)"}}"#
            )
        case .syncUpsDelete:
            return (kind, #"{"id":\#(id),"cmd":"syncups.delete","args":{"id":"\#(own.removeFirst())"}}"#)
        }
    }

    /// A change to the client's own sync-ups that keeps it owning one to three.
    private func change() -> Kind {
        if own.isEmpty { return .syncUpsCreate }
        if own.count >= 3 { return .syncUpsDelete }
        return [.syncUpsCreate, .syncUpsUpdate, .syncUpsUpdate, .syncUpsDelete].randomElement(using: &random)!
    }

    static let themes = [
        "bubblegum", "buttercup", "indigo", "lavender", "magenta", "navy", "orange", "oxblood", "periwinkle",
        "poppy", "purple", "seafoam", "sky", "tan", "teal", "yellow",
    ]

    // MARK: - Replies

    private func handle(_ reply: [UInt8], to kind: Kind) {
        guard reply.starts(with: #"{"id":\#(requestID),"#.utf8) else {
            result.unexpectedErrors += 1
            result.record("client \(index): \(kind.rawValue): reply to another request: \(text(reply))")
            return
        }
        if LineScan.isSuccess(reply) {
            if kind == .syncUpsCreate {
                guard let value = try? JSONParser().parse(reply), let id = value["result"]?["id"]?.stringValue else {
                    result.unexpectedErrors += 1
                    result.record("client \(index): syncups.create: no id in \(text(reply))")
                    return
                }
                own.append(id)
            }
            return
        }
        let error = (try? JSONParser().parse(reply))?["error"]
        let code = error?["code"]?.stringValue ?? "?"
        // The meeting controller deletes its older sync-ups; one may go between choosing and asking.
        if code == "not_found" && (kind == .meetingsGet || kind == .syncUpsGet) {
            result.expectedErrors += 1
            return
        }
        result.unexpectedErrors += 1
        result.record("client \(index): \(kind.rawValue): \(code): \(error?["message"]?.stringValue ?? text(reply))")
    }

    private func text(_ line: [UInt8]) -> String { String(String(decoding: line, as: UTF8.self).prefix(300)) }
}

/// Sleeps until `instant` on the monotonic clock.
func sleep(until instant: MonotonicInstant) {
    var spec = timespec(
        tv_sec: Int(instant.nanoseconds / 1_000_000_000), tv_nsec: Int(instant.nanoseconds % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
}
