import SyncUpsJSON
import SyncUpsProtocol

/// Who subscribes to what, and the numbering of the events published: the server's bookkeeping, apart
/// from the connections' own `topics`.
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

    /// A connection subscribed to `old` now subscribes to `new`.
    mutating func change(from old: Set<Topic>, to new: Set<Topic>, limit: Int) throws(ProtocolError) {
        if old.isEmpty && !new.isEmpty {
            guard subscriberCount < limit else {
                throw ProtocolError(.tooManySubscriptions, "the daemon already has \(limit) subscribers")
            }
            subscriberCount += 1
        } else if !old.isEmpty && new.isEmpty {
            subscriberCount -= 1
        }
        for topic in old { counts[topic, default: 0] -= 1 }
        for topic in new { counts[topic, default: 0] += 1 }
    }

    /// A connection subscribed to `topics` closed.
    mutating func remove(_ topics: Set<Topic>) {
        if !topics.isEmpty { subscriberCount -= 1 }
        for topic in topics { counts[topic, default: 0] -= 1 }
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
        try subscriptions.change(from: connection.topics, to: topics, limit: limits.maxSubscribers)
        connection.topics = topics
    }
}
