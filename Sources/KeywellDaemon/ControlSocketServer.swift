import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import Logging
import Synchronization

/// The PAM module's private channel: `$XDG_RUNTIME_DIR/keywell/control` (docs/control-protocol.md).
///
/// Bound early in start-up, before any bus exists. `UnixSocketListener` accepts; each accepted
/// connection is checked with `SO_PEERCRED` (root, the login process, or the user alone) before a
/// byte is read, then served on its own short-lived thread with 5 s timeouts, so a stalled client
/// never stalls the daemon.
final class ControlSocketServer: Sendable {
    typealias Handler = @Sendable (ControlProtocol.Request, LoginSessions.Sender) -> LoginSessions.Outcome

    var path: String { listener.path }
    private let handler: Handler
    private let logger: Logger
    private let listener: UnixSocketListener
    private let owner = getuid()
    private let maximumConnections = 16

    /// Binds and listens at once (`UnixSocketListener`: replaced if stale, 0600 before it appears).
    init(path: String, logger: Logger, handler: @escaping Handler) throws(DaemonError) {
        self.handler = handler
        self.logger = logger
        do { listener = try UnixSocketListener(path: path) } catch { throw DaemonError(error.description) }
    }

    func start() {
        let owner = owner
        listener.start(
            acceptThreadName: "control-accept", connectionThreadName: "control", maximumConnections: maximumConnections,
            UnixSocketListener.Handlers(
                // Someone else: closed without reading a byte.
                admit: { connection in
                    guard let peer = PeerCredentials.of(connection, pinning: false) else { return false }
                    return peer.uid == 0 || peer.uid == owner
                },
                busy: { connection in
                    try? connection.sendAll(ControlProtocol.response(status: SecStatus.allocate, message: "busy"))
                },
                serve: { [self] connection in
                    guard let peer = PeerCredentials.of(connection, pinning: false) else { return }
                    serve(connection, peer: peer)
                },
                failed: { [logger] reason in logger.error("control socket: \(reason)") }))
    }

    /// Removes the socket file (at a clean exit, so the module starts a new daemon at once).
    func removeSocketFile() {
        listener.removeSocketFile()
    }

    private func serve(_ connection: FileDescriptor, peer: PeerCredentials) {
        try? connection.setTimeouts(receiveSeconds: 5, sendSeconds: 5)
        let outcome: LoginSessions.Outcome
        var op = "?"
        do {
            let request = try ControlProtocol.readRequest(from: connection)
            op = String(Character(UnicodeScalar(request.operation.rawValue)))
            logger.debug("control request \(op) from pid \(peer.pid) (uid \(peer.uid))")
            outcome = handler(request, peer.uid == 0 ? .root : .user)
        } catch let rejection as ControlProtocol.Rejection {
            logger.notice("control request from pid \(peer.pid) refused: \(rejection.message)")
            outcome = LoginSessions.Outcome(status: rejection.status, message: rejection.message)
        } catch {
            logger.debug("control client pid \(peer.pid) went away or stalled")
            return
        }
        // The work is done either way; a login that stopped waiting (docs/control-protocol.md,
        // "Timing") goes on without the answer, and the log should say so.
        do { try connection.sendAll(ControlProtocol.response(status: outcome.status, message: outcome.message)) } catch {
            logger.notice("control request \(op) from pid \(peer.pid) was done, but the client stopped waiting for the answer")
        }
        connection.shutdownSending()
    }
}
