import Foundation
import KeywellAccess
import KeywellDBus
import KeywellIdentity
import KeywellSSHAgent
import KeywellSSHWire
import KeywellSystem
import Logging

/// The OpenSSH agent at `$XDG_RUNTIME_DIR/keywell/ssh-agent` (docs/ssh.md). Only the user's own
/// processes are served (`SO_PEERCRED`, before a byte is read); each connection's peer is named
/// as the direct socket names its callers, then served on a thread of its own, at most
/// `AgentLimits.maximumConnections` at once, with `AgentLimits.ioTimeoutSeconds` to send a frame.
final class SSHAgentServer: Sendable {

    let service: AgentService<KeychainKeyStore>
    private let listener: UnixSocketListener
    private let resolver: IdentityResolver
    private let gate: AccessGate
    private let logger: Logger
    private let connectionCount = Protected<UInt64>(0)

    init(path: String, store: KeychainKeyStore, logger: Logger) throws(DaemonError) {
        service = AgentService(store: store, logger: logger)
        resolver = store.resolver
        gate = store.gate
        self.logger = logger
        do { listener = try UnixSocketListener(path: path) } catch { throw DaemonError(error.description) }
    }

    var path: String { listener.path }

    func start() {
        let owner = getuid()
        listener.start(
            acceptThreadName: "ssh-agent-accept", connectionThreadName: "ssh-agent", maximumConnections: AgentLimits.maximumConnections,
            UnixSocketListener.Handlers(
                admit: { connection in PeerCredentials.of(connection, pinning: false)?.uid == owner },
                busy: { _ in },
                serve: { [self] connection in serve(connection) },
                failed: { [logger] reason in logger.error("ssh agent socket: \(reason)") }))
    }

    func removeSocketFile() {
        listener.removeSocketFile()
    }

    private func serve(_ connection: FileDescriptor) {
        let number = connectionCount.withLock { count -> UInt64 in
            count += 1
            return count
        }
        let name = "ssh-agent:\(number)"
        let credentials = PeerCredentials.of(connection)
        var identity: ApplicationIdentity?
        if let credentials {
            do {
                identity = try resolver.resolve(peer: credentials, socket: connection)
            } catch {
                logger.notice("ssh agent: cannot name pid \(credentials.pid): \(error); it is served as an unidentified program")
            }
        }
        let peer = AgentPeer(caller: AccessCaller(connection: name, identity: identity), pid: credentials?.pid ?? 0)
        defer { gate.connectionLeft(name) }
        AgentConnection.serve(connection, service: service, caller: peer)
    }
}
