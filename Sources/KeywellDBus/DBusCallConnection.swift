import CDBus
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// A private bus connection that only makes method calls: no I/O thread, no worker pool, no
/// objects, no signals. Each call sends its message and waits for the reply on the calling
/// thread (libdbus's `dbus_connection_send_with_reply_and_block`). For short-lived,
/// single-threaded clients such as the `keywell` command, which make one or two calls and exit:
/// a `DBusConnection` starts its loop thread and its tables first, which costs such a process
/// more than its call (docs/performance.md, "The command line").
///
/// Calls from several threads take turns: when several threads wait in libdbus at once, one
/// of them can miss the reply another thread read for it and wait until its timeout. A program
/// whose threads call at the same time wants a `DBusConnection`.
// @unchecked: libdbus connections are thread-safe once dbus_threads_init_default ran; calls are serialised by `turn`.
public final class DBusCallConnection: @unchecked Sendable {
    /// libdbus's connection: to the bus; on the direct socket, only once a call carries
    /// descriptors (which `pipelined` cannot pass). Guarded by `turn`, like everything below.
    private var raw: OpaquePointer?
    private let turn = ConditionLock()
    /// The bus's answer to Hello while it is on its way.
    private var hello: OpaquePointer?
    private var isBus: Bool
    /// On the direct socket: the server has answered a message on `raw`, so it is past the handshake.
    private var serverReadsMessages = false
    /// On the direct socket: its calls, with the handshake sent ahead of the first one.
    private var pipelined: PipelinedPeerSocket?
    /// On the direct socket: where libdbus connects when a call carries descriptors.
    private let directPath: String?
    /// On the direct socket: the bus to call instead when the server turns the first call away.
    private let fallbackAddress: String?
    private let handshakeTimeout: Duration

    /// A new private connection to `address`, registering with the bus (Hello). Hello is not
    /// waited for here: the bus serves a connection's messages in order, so the first call,
    /// sent right behind it, is answered after it, and its reply is read with that call's. A
    /// lookup is then one round trip after the handshake instead of two (docs/performance.md).
    public init(address: String) throws(DBusError) {
        let raw = try openPrivateConnection(address, registerWithBus: false)
        self.raw = raw
        isBus = true
        directPath = nil
        fallbackAddress = nil
        handshakeTimeout = .seconds(5)
        // Every stored property is set: a throw from here on runs deinit, which closes the connection.
        hello = try Self.sendHello(on: raw)
    }

    /// Sends Hello on a new bus connection; its answer is read with the first call's.
    private static func sendHello(on raw: OpaquePointer) throws(DBusError) -> OpaquePointer {
        let message = try MessageRef.methodCall(destination: StandardInterface.busName, path: StandardInterface.busPath,
                                                interface: StandardInterface.bus, member: StandardInterface.hello)
        var pending: OpaquePointer? = nil
        guard dbus_connection_send_with_reply(raw, message.pointer, &pending, milliseconds(.seconds(25))) != 0 else {
            throw .noMemory()
        }
        guard let pending else { throw .disconnected() }
        return pending
    }

    /// A connection straight to a `DBusPeerServer`'s socket at `path`: no bus and no Hello
    /// (docs/dbus-layer.md, "The direct socket"). Refused before anything is sent unless the
    /// folder holding the socket is this user's alone and the process listening runs as this
    /// user. The handshake leaves with the first call (`PipelinedPeerSocket`); a server that
    /// turns that call away unread (full, shutting down) fails it, or, with `fallbackAddress`,
    /// the call goes to that bus instead, and so do the later ones: safe, since no call was read.
    public init(directSocket path: String, fallbackAddress: String? = nil, timeout: Duration = .seconds(5)) throws(DBusError) {
        try Self.checkPrivateFolder(of: path)
        pipelined = try PipelinedPeerSocket(path: path)
        raw = nil
        isBus = false
        directPath = path
        self.fallbackAddress = fallbackAddress
        handshakeTimeout = timeout
    }

    /// libdbus's own connection to the direct socket at `path`, authenticated before it returns
    /// (for calls that pass descriptors).
    private static func openDirect(_ path: String, timeout: Duration) throws(DBusError) -> OpaquePointer {
        try checkPrivateFolder(of: path)
        guard let address = DBusConnection.unixSocketAddress(path) else { throw .noMemory() }
        let raw = try openPrivateConnection(address, registerWithBus: false)
        var fd: Int32 = -1
        let deadline = deadline(after: timeout)
        do throws(DBusError) {
            guard dbus_connection_get_socket(raw, &fd) != 0, fd >= 0 else { throw .notSupported("The direct socket has no descriptor") }
            guard let server = PeerCredentials.of(socket: fd, pinning: false), server.uid == getuid() else {
                throw .accessDenied("\(path) is not served by this user")
            }
            while dbus_connection_get_is_authenticated(raw) == 0 {
                let left = Int64(bitPattern: deadline &- monotonicNanoseconds()) / 1_000_000
                guard left > 0 else { throw .timedOut(after: timeout) }
                guard dbus_connection_read_write(raw, Int32(clamping: left)) != 0, dbus_connection_get_is_connected(raw) != 0 else {
                    throw .disconnected()
                }
            }
        } catch {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw error
        }
        return raw
    }

    /// The socket's folder is a real folder, this user's, open to nobody else: nobody else can
    /// have put a socket there.
    private static func checkPrivateFolder(of path: String) throws(DBusError) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")), slash != path.utf8.startIndex else {
            throw .invalidArgs("\(path) is not an absolute path in a folder")
        }
        let folder = String(path[..<slash])
        let state = PrivateFolderState.of(folder)
        if case .unreadable = state { throw .failed(state.problem(with: folder) ?? folder) }
        if let problem = state.problem(with: folder) { throw .accessDenied(problem) }
    }

    /// On the direct socket, sends the handshake now instead of with the first call (see
    /// `PipelinedPeerSocket.sendHandshake`): for a client with work to do before that call,
    /// during which the server takes the connection and answers it.
    public func sendHandshakeAhead() {
        turn.withLock { pipelined?.sendHandshake() }
    }

    /// Whether this connection goes straight to a peer (no bus).
    public var isDirect: Bool { turn.withLock { !isBus } }

    /// A new private connection to the session bus of this process's environment.
    public static func sessionBus() throws(DBusError) -> DBusCallConnection {
        guard let address = DBusConnection.sessionBusAddress() else { throw DBusConnection.noSessionBus }
        return try DBusCallConnection(address: address)
    }

    deinit {
        if let hello {
            dbus_pending_call_cancel(hello)
            dbus_pending_call_unref(hello)
        }
        if let raw {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
        }
    }

    /// The name the bus gave this connection: nil until the first call's reply was read (the
    /// bus's answer to Hello comes with it).
    public var uniqueName: String? {
        turn.withLock { raw.flatMap { dbus_bus_get_unique_name($0) }.map { String(cString: $0) } }
    }

    /// True until the bus drops the connection.
    public var isConnected: Bool {
        turn.withLock {
            if let pipelined { return pipelined.isConnected }
            return raw.map { dbus_connection_get_is_connected($0) != 0 } ?? false
        }
    }

    /// Calls a method and waits for its reply (the return values, or the error it answered).
    /// Times out with `NoReply` (`error.isTimeout`), as `DBusConnection.call` does.
    public func call(destination: String?, path: String, interface: String?, member: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25),
                     autoStart: Bool = true) throws(DBusError) -> [DBusValue] {
        var message = try MessageRef.methodCall(destination: destination, path: path, interface: interface, member: member,
                                                arguments: arguments, autoStart: autoStart)
        turn.lock()
        if let pipelined {
            if dbus_message_contains_unix_fds(message.pointer) == 0 {
                // No `Result` here: its type would be made at run time, a scan of every
                // conformance in the program, in a process that makes one call.
                var reply: MessageRef? = nil
                var failure: PipelinedPeerSocket.Failure? = nil
                do throws(PipelinedPeerSocket.Failure) {
                    reply = try pipelined.call(message, timeout: timeout)
                } catch {
                    failure = error
                }
                if let reply {
                    turn.unlock()
                    if reply.type == MessageType.error { throw reply.asError() }
                    return try reply.arguments()
                }
                if let failure {
                    guard case .turnedAway = failure, let fallbackAddress else {
                        turn.unlock()
                        throw failure.error
                    }
                    // Not read by the server: the bus takes this call and the later ones.
                    self.pipelined = nil
                    do throws(DBusError) {
                        let bus = try openPrivateConnection(fallbackAddress, registerWithBus: false)
                        raw = bus
                        isBus = true
                        hello = try Self.sendHello(on: bus)
                        // The direct socket numbered the message: a new one for the bus.
                        message = try MessageRef.methodCall(destination: destination, path: path, interface: interface,
                                                            member: member, arguments: arguments, autoStart: autoStart)
                    } catch {
                        turn.unlock()
                        throw error
                    }
                }
            } else if raw == nil, let directPath {
                // Descriptors: libdbus's transport negotiates passing them.
                do throws(DBusError) {
                    raw = try Self.openDirect(directPath, timeout: handshakeTimeout)
                } catch {
                    turn.unlock()
                    throw error
                }
            }
        }
        guard let raw else {
            turn.unlock()
            throw .disconnected()
        }
        // Whether descriptors may pass is settled during authentication, which is over once the
        // bus has answered Hello: a call carrying some waits for that answer first.
        if dbus_message_contains_unix_fds(message.pointer) != 0 {
            let refusedHello = finishHello()
            guard refusedHello == nil, dbus_connection_can_send_type(raw, TypeCode.unixFD) != 0 else {
                turn.unlock()
                throw refusedHello ?? .notSupported("This connection cannot pass file descriptors")
            }
            if !isBus, !serverReadsMessages {
                // The server may still be reading the handshake, as plain bytes: descriptors sent
                // with the bytes right behind BEGIN would be lost and the call refused. Once it has
                // answered a Ping it reads messages, with their descriptors.
                var pingError = CDBus.DBusError()
                dbus_error_init(&pingError)
                if let ping = try? MessageRef.methodCall(destination: nil, path: "/", interface: StandardInterface.peer, member: StandardInterface.ping),
                   let answer = dbus_connection_send_with_reply_and_block(raw, ping.pointer, Self.milliseconds(timeout), &pingError) {
                    dbus_message_unref(answer)
                    serverReadsMessages = true
                } else {
                    turn.unlock()
                    throw takeError(&pingError)
                }
            }
        }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        let reply = dbus_connection_send_with_reply_and_block(raw, message.pointer, Self.milliseconds(timeout), &error)
        if reply != nil { serverReadsMessages = true }
        let refusedHello = finishHello()
        turn.unlock()
        // A bus that refused Hello answers nothing else: its reason is the one worth reporting.
        if let refusedHello {
            if let reply { dbus_message_unref(reply) }
            dbus_error_free(&error)
            throw refusedHello
        }
        guard let reply else { throw takeError(&error) }
        return try MessageRef(owning: reply).arguments()
    }

    /// Takes Hello's reply, which arrived before the first call's (the bus answers in order):
    /// records the unique name it gave, or returns why it refused. Called with `turn` held.
    private func finishHello() -> DBusError? {
        guard let pending = hello else { return nil }
        hello = nil
        defer { dbus_pending_call_unref(pending) }
        // Already read with the call's reply, so this finds it without waiting; if the call
        // failed before the bus answered, this waits for Hello's own answer or the disconnection.
        dbus_pending_call_block(pending)
        guard let answer = dbus_pending_call_steal_reply(pending) else { return .disconnected() }
        let reply = MessageRef(owning: answer)
        if reply.type == MessageType.error { return reply.asError() }
        guard case .string(let name)? = try? reply.arguments().first else { return .failed("The bus answered Hello without a name") }
        guard let raw, dbus_bus_set_unique_name(raw, name) != 0 else { return .noMemory() }
        return nil
    }

    /// libdbus takes whole milliseconds in an Int32; longer waits are capped there (24 days).
    static func milliseconds(_ timeout: Duration) -> Int32 {
        let (seconds, attoseconds) = timeout.components
        guard seconds >= 0 else { return 0 }
        guard seconds < Int64(Int32.max / 1000) else { return Int32.max }
        return Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
