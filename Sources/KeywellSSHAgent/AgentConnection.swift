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
    public static func serve<Store>(_ socket: Int32, service: AgentService<Store>, caller: Store.Caller) {
        var timeout = timeval(tv_sec: AgentLimits.ioTimeoutSeconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var state = AgentConnectionState()
        while waitReadable(socket, seconds: idleSeconds) {
            var header = [UInt8](repeating: 0, count: 4)
            guard readAll(socket, &header) else { return }
            let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            guard length <= AgentLimits.maximumFrame else {
                // OpenSSH's agent drops such a client; a failure first says why.
                _ = writeFrame(socket, AgentReply.failure)
                endAfterReading(socket)
                return
            }
            var body = [UInt8](repeating: 0, count: length)
            guard readAll(socket, &body) else { return }
            let reply = length == 0 ? AgentReply.failure : service.handle(body, connection: &state, caller: caller)
            // The request may have held a private key or a passphrase.
            SecretWipe.wipe(body)
            guard writeFrame(socket, reply) else { return }
        }
    }

    /// Ends the connection so that the reply already sent reaches the client: closing with its
    /// unread bytes still queued would reset the connection and lose the reply. Reads what the
    /// client still sends, up to one frame's worth, for at most a second.
    private static func endAfterReading(_ socket: Int32) {
        shutdown(socket, Int32(SHUT_WR))
        var discarded = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while discarded < AgentLimits.maximumFrame, waitReadable(socket, seconds: 1) {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            discarded += count
        }
    }

    private static func waitReadable(_ socket: Int32, seconds: Int32) -> Bool {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return retryingOnInterrupt { poll(&descriptor, 1, seconds * 1000) } > 0
    }

    private static func readAll(_ socket: Int32, _ buffer: inout [UInt8]) -> Bool {
        var done = 0
        let total = buffer.count
        return buffer.withUnsafeMutableBytes { raw in
            while done < total {
                let count = retryingOnInterrupt { recv(socket, raw.baseAddress! + done, total - done, 0) }
                guard count > 0 else { return false }
                done += count
            }
            return true
        }
    }

    private static func writeFrame(_ socket: Int32, _ body: [UInt8]) -> Bool {
        var frame = SSHWireWriter()
        frame.string(body)
        let bytes = frame.bytes
        var done = 0
        return bytes.withUnsafeBytes { raw in
            while done < bytes.count {
                let count = retryingOnInterrupt { send(socket, raw.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return false }
                done += count
            }
            return true
        }
    }
}
