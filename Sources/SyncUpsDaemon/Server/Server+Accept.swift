import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// Accepting: the listener, who may connect, the greeting.
extension Server {
    /// Starts accepting on `listener`, a listening, non-blocking Unix stream socket. The server owns it from
    /// here on: `stopAccepting` (or `shutDown`) closes it, and nobody else may.
    func start(listener: FileDescriptor) throws(SystemError) {
        self.listener = listener
        listenerGate = try ListenerGate(loop: loop, listener: listener) { [unowned self] in acceptPending() }
    }

    /// Closes the listener: a client connecting from now on is refused at once (a socket of our own), or waits
    /// in systemd's for the next start (socket activation), rather than in a backlog nobody reads while the
    /// daemon stops (it waited for the meeting's last words, then was reset). `shutDown` does it too.
    func stopAccepting() {
        listenerGate?.close()
        listenerGate = nil
        listener?.close()
        listener = nil
    }

    /// How many connections one readiness of the listener accepts before the loop polls again (SwiftNIO's
    /// server channel reads a bounded `maxMessagesPerRead` too): the listener is level-triggered, so what is
    /// left is reported on the next poll, after the other clients' input, hang-ups and timers.
    static let acceptsPerTurn = 16

    private func acceptPending() {
        guard let listener else { return }
        for _ in 0..<Self.acceptsPerTurn {
            let fd: FileDescriptor
            do {
                guard let accepted = try UnixSocket.accept(listener) else { return }
                fd = accepted
            } catch {
                // The listener stays readable: retrying at once would spin.
                guard let listenerGate else { return }
                if ListenerGate.isShortage(error) {
                    let refused = listenerGate.pause { self.refuse($0, Self.outOfDescriptors) }
                    logger.throttled(
                        .warning, "accept.descriptors",
                        "out of file descriptors (\(error)): \(refused ? "refused a connection, " : "")\(listenerGate.refusals) refused so far; accepting again when a connection closes"
                    )
                } else {
                    _ = listenerGate.pause(refusingWith: nil)
                    logger.throttled(.warning, "accept", "accepting a connection failed: \(error)")
                }
                return
            }
            if let refused = listenerGate?.acceptedAfterShortage() {
                logger.notice("accepting connections again, after refusing \(refused) for want of file descriptors")
            }
            admit(fd)
        }
    }

    static let outOfDescriptors = ProtocolError(
        .tooManyConnections, "syncupsd is out of file descriptors; try again once other clients have left")

    /// Adds a connection on `fd` as if accepted (the in-process daemon's client end of a socket pair).
    func adopt(_ fd: FileDescriptor) -> Connection? {
        try? register(fd, peer: PeerCredentials(pid: getpid(), uid: ownUID, gid: getegid()))
    }

    /// A new connection on `fd`, watched by the loop and numbered.
    private func register(_ fd: FileDescriptor, peer: PeerCredentials) throws(SystemError) -> Connection {
        let connection = Connection(
            number: nextNumber, fd: fd, peer: peer,
            timeouts: ConnectionState.Timeouts(
                stall: .seconds(limits.stallTimeoutSeconds), partialLine: .seconds(limits.partialLineTimeoutSeconds)))
        nextNumber += 1
        connection.watch = try loop.watch(fd, for: .readable) { [unowned self, unowned connection] events in
            handleEvents(events, on: connection)
        }
        connections[connection.number] = connection
        return connection
    }

    private func admit(_ fd: FileDescriptor) {
        guard let peer = try? UnixSocket.peerCredentials(fd) else {
            fd.close()
            return
        }
        if peer.uid != ownUID {
            logger.throttled(
                .warning, "accept.uid",
                "refused a connection from uid \(peer.uid) (pid \(peer.pid)): only uid \(ownUID) may connect")
            refuse(fd, ProtocolError(.permissionDenied, "only the user running syncupsd (uid \(ownUID)) may connect"))
            return
        }
        if connections.count >= limits.maxConnections {
            logger.throttled(
                .warning, "accept.limit",
                "refused a connection from pid \(peer.pid): already \(connections.count) connections")
            let count = limits.maxConnections
            refuse(
                fd,
                ProtocolError(
                    .tooManyConnections, "the daemon already serves \(count) connection\(count == 1 ? "" : "s")"))
            return
        }
        let connection: Connection
        do {
            connection = try register(fd, peer: peer)
        } catch {
            logger.throttled(.warning, "accept.watch", "cannot watch a new connection: \(error)")
            fd.close()
            return
        }
        logger.debug("\(connection.label) connected")
        let hello: JSONValue = [
            "protocol": .int(Wire.protocolVersion),
            "version": .string(version),
            "limits": limits.json,
        ]
        enqueue(Wire.event(EventName.hello, seq: nil, data: hello), to: connection)
        flush(connection)
    }

    /// Sends one error line to a connection that is not admitted, without waiting, and closes it.
    func refuse(_ fd: FileDescriptor, _ error: ProtocolError) {
        let line = Wire.failure(id: .null, error: error)
        _ = line.withUnsafeBytes { try? UnixSocket.send(fd, $0) }
        fd.close()
    }
}
