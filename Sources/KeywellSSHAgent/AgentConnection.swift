import Glibc
import KeywellCore
import KeywellSSHWire
import KeywellSystem

/// One client's connection: frames in, replies out, until the client closes, stalls or
/// breaks the framing. Each frame is a 4-byte big-endian length and that many bytes.
public enum AgentConnection {
    /// How long a connection may sit idle between requests before the agent closes it.
    public static let idleSeconds: Int32 = 300

    /// Serves `socket` until it ends; the caller closes it.
    public static func serve<Store>(_ socket: FileDescriptor, service: AgentService<Store>, caller: Store.Caller) {
        try? socket.setTimeouts(receiveSeconds: AgentLimits.ioTimeoutSeconds, sendSeconds: AgentLimits.ioTimeoutSeconds)
        var state = AgentConnectionState()
        while waitReadable(socket, seconds: idleSeconds) {
            // An end of stream, a timeout or an error: the connection is over.
            guard let header = try? socket.read(exactly: 4) else { return }
            let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            guard length <= AgentLimits.maximumFrame else {
                // OpenSSH's agent drops such a client; a failure first says why.
                _ = writeFrame(socket, AgentReply.failure)
                endAfterReading(socket)
                return
            }
            guard let body = try? socket.read(exactly: length) else { return }
            let reply = length == 0 ? AgentReply.failure : service.handle(body, connection: &state, caller: caller)
            // The request may have held a private key or a passphrase.
            SecretWipe.wipe(body)
            guard writeFrame(socket, reply) else { return }
        }
    }

    /// Ends the connection so that the reply already sent reaches the client: closing with its
    /// unread bytes still queued would reset the connection and lose the reply. Reads what the
    /// client still sends, up to one frame's worth, for at most a second.
    private static func endAfterReading(_ socket: FileDescriptor) {
        socket.shutdownSending()
        var discarded = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while discarded < AgentLimits.maximumFrame, waitReadable(socket, seconds: 1) {
            let count = (try? buffer.withUnsafeMutableBytes { raw throws(Errno) in try socket.read(into: raw) }) ?? 0
            guard count > 0 else { return }
            discarded += count
        }
    }

    private static func waitReadable(_ socket: FileDescriptor, seconds: Int32) -> Bool {
        ((try? socket.wait(for: POLLIN, milliseconds: seconds * 1000)) ?? 0) != 0
    }

    private static func writeFrame(_ socket: FileDescriptor, _ body: [UInt8]) -> Bool {
        var frame = SSHWireWriter()
        frame.string(body)
        return (try? socket.sendAll(frame.bytes)) != nil
    }
}
