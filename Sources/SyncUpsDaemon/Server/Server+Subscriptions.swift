import SyncUpsJSON
import SyncUpsProtocol

/// Who subscribes to what, and the numbering of the events published: the server's bookkeeping. Each
/// connection's `topics` says what it follows; the counts per topic (so a publish nobody follows costs no
/// encoding and no walk of the connections) are kept beside them, and both change here alone, together.
struct Subscriptions {
    /// How many connections subscribe to anything.
    private(set) var subscriberCount = 0
    /// How many connections subscribe to each topic.
    private var counts: [Topic: Int] = [:]
    /// The number of the last event published; strictly increasing for the daemon's lifetime.
    private(set) var seq = 0

    /// Takes the next `seq`; returns whether anybody subscribes to `topic`.
    mutating func number(_ topic: Topic) -> Bool {
        seq += 1
        return counts[topic, default: 0] > 0
    }

    /// `connection` now subscribes to `topics` (none: it follows nothing any more); refused past `limit`
    /// subscribers, with nothing changed.
    mutating func set(_ topics: Set<Topic>, for connection: Connection, limit: Int = .max) throws(ProtocolError) {
        let old = connection.topics
        if old.isEmpty && !topics.isEmpty {
            guard subscriberCount < limit else {
                throw ProtocolError(.tooManySubscriptions, "the daemon already has \(limit) subscribers")
            }
            subscriberCount += 1
        } else if !old.isEmpty && topics.isEmpty {
            subscriberCount -= 1
        }
        for topic in old { counts[topic, default: 0] -= 1 }
        for topic in topics { counts[topic, default: 0] += 1 }
        connection.topics = topics
    }

    /// `connection` follows nothing any more (it hung up, or closed).
    mutating func remove(_ connection: Connection) {
        try? set([], for: connection)  // never refused: the limit is only for subscribing
    }
}

/// Subscriptions: publishing events to the clients that follow a topic.
extension Server {
    /// Publishes an event to every client subscribed to `topic`, numbered with the next `seq`. The line is
    /// encoded once and queued to every subscriber; the sockets are written at the end of the loop's turn, so
    /// publishing never runs anything of another client's.
    func publish(_ topic: Topic, _ name: String, _ data: @autoclosure () -> JSONValue) {
        guard subscriptions.number(topic) else { return }
        let line = Wire.event(name, seq: seq, data: data())
        for connection in connections.values where connection.topics.contains(topic) {
            enqueue(line, to: connection)
            flushAtEndOfTurn(connection)
        }
    }

    /// Changes what `connection` is subscribed to.
    func setTopics(_ topics: Set<Topic>, for connection: Connection) throws(ProtocolError) {
        try subscriptions.set(topics, for: connection, limit: limits.maxSubscribers)
    }
}
