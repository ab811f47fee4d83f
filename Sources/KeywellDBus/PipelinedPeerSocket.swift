import CDBus
import KeywellProtocol
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// The client's end of the direct socket, with the handshake sent ahead (docs/dbus-layer.md,
/// "The direct socket"). libdbus's client waits for the server's answer to each handshake line
/// (`AUTH`, then `NEGOTIATE_UNIX_FD`) before it sends `BEGIN` and the call: three round trips to
/// the server for one call. The D-Bus protocol lets a client send its lines without waiting, and
/// libdbus's server reads whatever follows `BEGIN` as messages; so the first call leaves as
/// `\0AUTH EXTERNAL <uid>\r\nBEGIN\r\n` and the message in one write, and the server's `OK` comes
/// back with the reply: one round trip. It passes no descriptors (no `NEGOTIATE_UNIX_FD`): a
/// call carrying some goes through libdbus's own transport (`DBusCallConnection`).
///
/// Not thread-safe: its one owner serialises calls.
final class PipelinedPeerSocket {
    /// Why a call failed; `turnedAway` when the server answered no `OK` before it closed or
    /// refused, so that it cannot have read the call (it reads messages only after `OK`'s
    /// `BEGIN`, and `OK` is written before any message is handled): trying elsewhere is safe.
    enum Failure: Error {
        case turnedAway(DBusError)
        case failed(DBusError)

        var error: DBusError {
            switch self {
            case .turnedAway(let error), .failed(let error): error
            }
        }
    }

    /// The longest handshake line the server may answer (`OK` and a 32-digit GUID is 37 bytes).
    static let maximumLine = 512
    /// The longest message read: the wire format's maximum, libdbus's default (128 MiB).
    static let maximumMessage = 1 << 27
    /// Read at a time.
    private static let chunk = 64 * 1024

    private let socket: FileDescriptor
    /// Sent in front of the first message; nil once sent.
    private var handshake: [UInt8]?
    /// The server has answered `OK`: it reads what this sends as messages.
    private(set) var serverAgreed = false
    private(set) var isConnected = true
    /// Bytes read and not used yet; wiped as they are dropped (replies may hold secrets).
    private var received = ReceiveBuffer()
    private var nextSerial: UInt32 = 1

    /// Connected to `path` (the caller checked the folder); the server must run as this user.
    init(path: String) throws(DBusError) {
        do {
            socket = try FileDescriptor.connectUnixSocket(path)
        } catch {
            throw .disconnected("\(error)")
        }
        guard let server = PeerCredentials.of(socket: socket.rawValue, pinning: false), server.uid == getuid() else {
            try? socket.close()
            throw .accessDenied("\(path) is not served by this user")
        }
        do {
            try socket.setNonBlocking()
        } catch {
            try? socket.close()
            throw .failed("The direct socket: \(error)")
        }
        // EXTERNAL's identity is the uid in decimal, hex-encoded, as libdbus's client sends it;
        // the server checks it against the socket's own credentials.
        let hexUID = LowercaseHex.string(String(geteuid()).utf8)
        handshake = [0] + Array("AUTH EXTERNAL \(hexUID)\r\nBEGIN\r\n".utf8)
    }

    deinit {
        received.release()
        try? socket.close()
    }

    /// Sends the handshake now rather than with the first call, when the caller has work to do
    /// before that call: the server takes the connection and answers the handshake meanwhile.
    /// Nothing waits; bytes the socket does not take now go with the first call.
    func sendHandshake() {
        guard let bytes = handshake else { return }
        let sent = bytes.withUnsafeBytes { raw in
            retryingOnInterrupt { Glibc.send(socket.rawValue, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL)) }
        }
        if sent > 0 { handshake = sent == bytes.count ? nil : Array(bytes[sent...]) }
    }

    /// Sends `message` and waits up to `timeout` for its reply (a method return or an error
    /// message, which the caller turns into its error).
    func call(_ message: MessageRef, timeout: Duration) throws(Failure) -> MessageRef {
        guard isConnected else { throw .failed(.disconnected()) }
        let deadline = deadline(after: timeout)
        let serial = nextSerial
        nextSerial = nextSerial == UInt32.max ? 1 : nextSerial + 1
        dbus_message_set_serial(message.pointer, serial)
        try send(message, until: deadline, timeout: timeout)
        while true {
            guard let reply = try nextMessage(until: deadline, timeout: timeout) else { continue }
            let type = reply.type
            if type == MessageType.methodReturn || type == MessageType.error, dbus_message_get_reply_serial(reply.pointer) == serial {
                return reply
            }
            // Anything else (a signal the server sent on its own) is not this call's.
        }
    }

    private func send(_ message: MessageRef, until deadline: UInt64, timeout: Duration) throws(Failure) {
        var marshalled: UnsafeMutablePointer<CChar>? = nil
        var length: Int32 = 0
        guard dbus_message_marshal(message.pointer, &marshalled, &length) != 0, let marshalled else { throw .failed(.noMemory()) }
        // The copy may hold a secret (`ay` arguments): wiped before it is freed.
        defer {
            SecretMemory.wipe(UnsafeMutableRawPointer(marshalled), count: Int(length))
            dbus_free(marshalled)
        }
        let prefix = handshake ?? []
        handshake = nil
        // Sent ahead and answered already (`sendHandshake`): the answer is read with the reply.
        let body = UnsafeRawBufferPointer(start: marshalled, count: Int(length))
        var sent = 0
        let total = prefix.count + body.count
        while sent < total {
            let count: Int = prefix.withUnsafeBytes { head in
                // Two vectors in a tuple, not an Array: an `[iovec]` would be one more generic
                // type made at run time in a process that makes one call.
                let headLeft = max(0, head.count - sent)
                let bodySent = max(0, sent - head.count)
                var parts = (
                    iovec(iov_base: headLeft > 0 ? UnsafeMutableRawPointer(mutating: head.baseAddress! + sent) : nil, iov_len: headLeft),
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress! + bodySent), iov_len: body.count - bodySent))
                return withUnsafeMutableBytes(of: &parts) { raw in
                    var header = msghdr()
                    header.msg_iov = raw.baseAddress!.assumingMemoryBound(to: iovec.self)
                    header.msg_iovlen = 2
                    return retryingOnInterrupt { sendmsg(socket.rawValue, &header, Int32(MSG_NOSIGNAL)) }
                }
            }
            if count > 0 {
                sent += count
                continue
            }
            guard Errno.current == .wouldBlock else {
                // The server closed: what it wrote before is still to be read, and whether it
                // read the call is settled by its `OK` (`fail`).
                return
            }
            try waitFor(POLLOUT, until: deadline, timeout: timeout)
        }
    }

    /// The next whole message, or nil when more bytes were read and none is complete yet.
    private func nextMessage(until deadline: UInt64, timeout: Duration) throws(Failure) -> MessageRef? {
        if !serverAgreed {
            try readHandshakeAnswer(until: deadline, timeout: timeout)
        }
        if received.count >= 16 {
            let needed = received.withBytes { dbus_message_demarshal_bytes_needed($0.baseAddress?.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
            guard needed >= 0, needed <= Self.maximumMessage else { throw fail(.failed("The direct socket sent an invalid message")) }
            if needed > 0, received.count >= Int(needed) {
                var error = CDBus.DBusError()
                dbus_error_init(&error)
                let message = received.withBytes { dbus_message_demarshal($0.baseAddress?.assumingMemoryBound(to: CChar.self), needed, &error) }
                received.drop(Int(needed))
                guard let message else { throw fail(takeError(&error)) }
                return MessageRef(owning: message)
            }
        }
        try readMore(until: deadline, timeout: timeout)
        return nil
    }

    /// Reads the server's `OK <guid>` line; anything else means it did not take the client.
    private func readHandshakeAnswer(until deadline: UInt64, timeout: Duration) throws(Failure) {
        while true {
            if let end = received.lineEnd(within: Self.maximumLine) {
                let line = received.withBytes { String(decoding: UnsafeRawBufferPointer(rebasing: $0[..<end]), as: UTF8.self) }
                received.drop(end + 2)
                guard line.hasPrefix("OK ") else {
                    isConnected = false
                    throw .turnedAway(.accessDenied("The direct socket refused the handshake: \(line.prefix(64))"))
                }
                serverAgreed = true
                return
            }
            guard received.count < Self.maximumLine else {
                isConnected = false
                throw .turnedAway(.failed("The direct socket answered the handshake with a line too long"))
            }
            try readMore(until: deadline, timeout: timeout)
        }
    }

    private func readMore(until deadline: UInt64, timeout: Duration) throws(Failure) {
        while true {
            guard isConnected else { throw fail(.disconnected()) }
            let count = received.append(from: socket.rawValue, upTo: Self.chunk)
            if count > 0 { return }
            if count == 0 {
                isConnected = false
                throw fail(.disconnected())
            }
            let error = Errno.current
            guard error == .wouldBlock else {
                isConnected = false
                throw fail(.disconnected("The direct socket: \(error)"))
            }
            try waitFor(POLLIN, until: deadline, timeout: timeout)
        }
    }

    private func waitFor(_ event: Int32, until deadline: UInt64, timeout: Duration) throws(Failure) {
        let left = Int64(bitPattern: deadline &- monotonicNanoseconds()) / 1_000_000
        guard left > 0 else { throw .failed(.timedOut(after: timeout)) }
        let ready: Int32
        do {
            ready = try socket.wait(for: event, milliseconds: Int32(clamping: left))
        } catch {
            throw fail(.failed("The direct socket: \(error)"))
        }
        guard ready != 0 else { throw .failed(.timedOut(after: timeout)) }
    }

    /// A failure before the server's `OK` is a refusal (the call was not read), after it a failure.
    private func fail(_ error: DBusError) -> Failure {
        serverAgreed ? .failed(error) : .turnedAway(error)
    }
}

/// Bytes read from the socket, in memory of its own that is wiped as bytes are dropped and at
/// the end (a reply may hold a secret; an Array would leave copies behind as it grows).
private struct ReceiveBuffer {
    private var storage: UnsafeMutableRawBufferPointer?
    private var start = 0
    private(set) var count = 0

    mutating func append(from socket: Int32, upTo chunk: Int) -> Int {
        reserve(chunk)
        let buffer = storage!
        let free = buffer.count - start - count
        let read = retryingOnInterrupt { recv(socket, buffer.baseAddress! + start + count, free, 0) }
        if read > 0 { count += read }
        return read
    }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        guard let storage else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return body(UnsafeRawBufferPointer(rebasing: storage[start..<start + count]))
    }

    /// The offset of the first "\r\n" within the first `limit` bytes.
    func lineEnd(within limit: Int) -> Int? {
        withBytes { bytes in
            let end = min(bytes.count, limit)
            guard end >= 2 else { return nil }
            for index in 0..<end - 1 where bytes[index] == 0x0D && bytes[index + 1] == 0x0A { return index }
            return nil
        }
    }

    mutating func drop(_ used: Int) {
        guard let storage else { return }
        SecretMemory.wipe(UnsafeMutableRawBufferPointer(rebasing: storage[start..<start + used]))
        start += used
        count -= used
        if count == 0 { start = 0 }
    }

    /// Room for `more` bytes after those kept: what is kept moves to the front, or to a bigger
    /// buffer (the old one wiped).
    private mutating func reserve(_ more: Int) {
        guard let old = storage else {
            storage = .allocate(byteCount: max(more, 4096), alignment: 8)
            return
        }
        if old.count - start - count >= more { return }
        if old.count - count >= more {
            if count > 0 { UnsafeMutableRawBufferPointer(rebasing: old[0..<count]).copyMemory(from: UnsafeRawBufferPointer(rebasing: old[start..<start + count])) }
            SecretMemory.wipe(UnsafeMutableRawBufferPointer(rebasing: old[count..<old.count]))
            start = 0
            return
        }
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(old.count * 2, count + more), alignment: 8)
        bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: old[start..<start + count]))
        SecretMemory.wipe(old)
        old.deallocate()
        storage = bigger
        start = 0
    }

    mutating func release() {
        guard let storage else { return }
        SecretMemory.wipe(storage)
        storage.deallocate()
        self.storage = nil
        start = 0
        count = 0
    }
}
