import Foundation
import KeywellSystem
import KeywellTestSupport

@testable import KeywellDBus

/// A private bus with a test service on one connection and a client on another.
// @unchecked: immutable after init; the bus and connections it holds are thread-safe.
final class ServiceFixture: @unchecked Sendable {
    static let name = "org.keywell.Test"
    static let path = "/org/keywell/Test"
    static let interfaceName = "org.keywell.Test1"

    static let interface = DBusInterface(
        name: interfaceName,
        methods: [
            // Any arguments, returned as they came.
            DBusMethod(name: "Echo", annotations: [DBusMethod.anyArgumentsAnnotation]),
            DBusMethod(name: "Sleep", inputs: [DBusArgument("milliseconds", .uint32)]),
            // Holds its worker until the test opens the named gate (HandlerGates).
            DBusMethod(name: "Hold", inputs: [DBusArgument("gate", .string)]),
            DBusMethod(name: "Fail", inputs: [DBusArgument("name", .string), DBusArgument("message", .string)]),
            DBusMethod(name: "CountKeys", inputs: [DBusArgument("dict", .stringVariantDict)], outputs: [DBusArgument("count", .uint32)]),
            DBusMethod(name: "Emit", inputs: [DBusArgument("text", .string)]),
            DBusMethod(name: "WhoCalls", outputs: [DBusArgument("pid", .uint32), DBusArgument("uid", .uint32)]),
            DBusMethod(name: "ReplyLater", inputs: [DBusArgument("milliseconds", .uint32)], outputs: [DBusArgument("text", .string)]),
            DBusMethod(name: "Forget"),
            // Registers work for after the reply, then replies (or, for the Drop form, does not)
            // with whether the call was `DBusMethodCall.current` while its handler ran.
            DBusMethod(name: "AfterReply", outputs: [DBusArgument("wasCurrent", .bool)]),
            DBusMethod(name: "AfterReplyDrop"),
            // Which thread the handler ran on ("io" or "worker"); `Where` asks for the I/O thread.
            DBusMethod(name: "Where", outputs: [DBusArgument("thread", .string)], annotations: [DBusMethod.anyArgumentsAnnotation]),
            DBusMethod(name: "WhereOnWorker", outputs: [DBusArgument("thread", .string)]),
            // The pthread id of the thread the handler ran on, on the loop and off it.
            DBusMethod(name: "ThreadID", outputs: [DBusArgument("thread", .uint64)]),
            DBusMethod(name: "ThreadIDOffLoop", inputs: [DBusArgument("milliseconds", .uint32)],
                       outputs: [DBusArgument("thread", .uint64)]),
            DBusMethod(name: "ThreadIDOffLoopHeld", inputs: [DBusArgument("gate", .string)],
                       outputs: [DBusArgument("thread", .uint64)]),
            // Placed on the loop: holds the gate, then replies with `size` bytes.
            DBusMethod(name: "BigOnLoop", inputs: [DBusArgument("gate", .string), DBusArgument("size", .uint32)],
                       outputs: [DBusArgument("bytes", .bytes)]),
            // Placed on the loop: notes where it runs ("io" or "worker") in `holdOnLoopThreads`,
            // then holds the gate.
            DBusMethod(name: "HoldOnLoop", inputs: [DBusArgument("gate", .string)]),
            // Echoes its arguments and keeps them (same storage) in `kept`, as a careless handler would.
            DBusMethod(name: "Keep", annotations: [DBusMethod.anyArgumentsAnnotation]),
            DBusMethod(name: "KeepPublic", annotations: [DBusMethod.anyArgumentsAnnotation]),
            // A password in and out, as KWallet's `writePassword` and `readPassword` carry it:
            // `(label, secret) → (secret, {label: <secret>})`. Keeps a reference to its call's
            // message in `keptSecretCalls`, to read libdbus's copy once the call is done.
            DBusMethod(name: "KeepSecret", inputs: [DBusArgument("label", .string), DBusArgument("secret", .string)],
                       outputs: [DBusArgument("secret", .string), DBusArgument("list", .stringVariantDict)],
                       annotations: [DBusAnnotation(name: "org.keywell.SecretStrings", value: "In1 Out0 Out1")],
                       secretStrings: DBusSecretStrings(inputs: [1], outputs: [0, 1])),
            // A long call's handler: works (polling `isAbandoned`) until its caller left or its
            // deadline passed, then replies with `checkStillWanted()`'s error; `abandonedBy`
            // records which. Hang guard: 60 s.
            DBusMethod(name: "WorkUntilAbandoned"),
        ],
        signals: [DBusSignalDescription(name: "Said", arguments: [DBusArgument("text", .string)])],
        properties: [
            DBusProperty(name: "Label", signature: .string, access: .readwrite),
            DBusProperty(name: "Count", signature: .uint32, access: .read),
        ])

    let bus: PrivateSessionBus
    let server: DBusConnection
    let client: DBusConnection
    let label = LockedValue("initial")

    init() throws {
        bus = try PrivateSessionBus()
        server = try bus.connect()
        client = try bus.connect()
        let label = self.label
        let object = DBusClosureObject(
            interfaces: [Self.interface],
            getProperty: { (name, _, _) throws(DBusError) -> DBusValue in
                switch name {
                case "Label": return .string(label.value)
                case "Count": return .uint32(7)
                default: throw .unknownProperty(name)
                }
            },
            setProperty: { (name, _, value, _) throws(DBusError) in
                guard name == "Label", let text = value.stringValue else { throw .propertyReadOnly(name) }
                label.value = text
            },
            placement: { call in ["Where", "ThreadID", "BigOnLoop", "HoldOnLoop"].contains(call.member) ? .ioThread : .worker },
            handler: Self.handle)
        try server.register(object, at: Self.path)
        _ = try server.requestName(Self.name, flags: [.doNotQueue])
    }

    deinit {
        client.close()
        server.close()
        bus.stop()
    }

    /// Where each `HoldOnLoop` ran, in order.
    static let holdOnLoopThreads = LockedValue<[String]>([])
    /// What `Keep` was last called with.
    static let kept = LockedValue<[DBusValue]>([])
    static let keptPublic = LockedValue<[DBusValue]>([])
    /// The messages of `KeepSecret`'s calls, referenced (`dbus_message_ref`), and what the
    /// handler was given: for the test to release.
    static let keptSecretCalls = LockedValue<[(message: UnsafeSendablePointer, arguments: [DBusValue])]>([])
    /// For each piece of after-reply work as it ran: whether the call had replied by then.
    static let afterReplyRuns = LockedValue<[Bool]>([])

    static func handle(_ call: DBusMethodCall) {
        switch call.member {
        case "Echo":
            call.reply(call.arguments)
        case "Where", "WhereOnWorker":
            call.reply([.string(call.connection.isOnIOThread ? "io" : "worker")])
        case "ThreadID":
            call.reply([.uint64(UInt64(pthread_self()))])
        case "BigOnLoop":
            call.reply { () throws(DBusError) -> [DBusValue] in
                HandlerGates.shared.hold(try call.arguments.string(at: 0))
                return [.bytes(Array(repeating: 0x5a, count: Int(try call.arguments.uint32(at: 1))))]
            }
        case "HoldOnLoop":
            call.reply { () throws(DBusError) -> [DBusValue] in
                holdOnLoopThreads.mutate { $0.append(call.connection.isOnIOThread ? "io" : "worker") }
                HandlerGates.shared.hold(try call.arguments.string(at: 0))
                return []
            }
        case "ThreadIDOffLoop":
            call.reply { () throws(DBusError) -> [DBusValue] in
                usleep(try call.arguments.uint32(at: 0) * 1000)
                return [.uint64(UInt64(pthread_self()))]
            }
        case "ThreadIDOffLoopHeld":
            call.reply { () throws(DBusError) -> [DBusValue] in
                HandlerGates.shared.hold(try call.arguments.string(at: 0))
                return [.uint64(UInt64(pthread_self()))]
            }
        case "Sleep":
            call.reply { () throws(DBusError) -> [DBusValue] in
                let milliseconds = try call.arguments.uint32(at: 0)
                usleep(milliseconds * 1000)
                return []
            }
        case "Hold":
            call.reply { () throws(DBusError) -> [DBusValue] in
                HandlerGates.shared.hold(try call.arguments.string(at: 0))
                return []
            }
        case "Fail":
            call.reply { () throws(DBusError) -> [DBusValue] in
                throw DBusError(name: try call.arguments.string(at: 0), message: try call.arguments.string(at: 1))
            }
        case "CountKeys":
            call.reply { () throws(DBusError) -> [DBusValue] in
                return [.uint32(UInt32(try call.arguments.stringVariantDict(at: 0).count))]
            }
        case "Emit":
            call.reply { () throws(DBusError) -> [DBusValue] in
                try call.connection.emitSignal(path: path, interface: interfaceName, member: "Said",
                                               arguments: [.string(try call.arguments.string(at: 0))])
                return []
            }
        case "WhoCalls":
            call.reply { () throws(DBusError) -> [DBusValue] in
                [.uint32(try call.connection.unixProcessID(of: call.sender)), .uint32(try call.connection.unixUser(of: call.sender))]
            }
        case "ReplyLater":
            // Answer from another thread after the handler returned.
            let milliseconds = (try? call.arguments.uint32(at: 0)) ?? 0
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(milliseconds))) {
                call.reply([.string("later")])
            }
        case "Forget":
            break  // dropped without a reply: the layer must answer for us
        case "AfterReply", "AfterReplyDrop":
            let runs = afterReplyRuns
            call.afterReply { [weak call] in runs.value.append(call?.hasReplied ?? false) }
            guard call.member == "AfterReply" else { break }
            call.reply([.bool(DBusMethodCall.current === call)])
            // Already replied: this one runs at once. (Weak: work kept by the call must not keep it.)
            call.afterReply { [weak call] in runs.value.append(call?.hasReplied ?? false) }
        case "Keep":
            kept.value = call.arguments
            call.reply(call.arguments)
        case "KeepPublic":
            // The same, but the handler says the bytes are no secret: the reply leaves them alone.
            let copies = call.arguments.map { value -> DBusValue in
                guard case .bytes(let bytes) = value else { return value }
                return .bytes(bytes.withUnsafeBufferPointer { Array($0) })  // storage of its own, not the call's
            }
            keptPublic.value = copies
            call.replyMayHoldSecrets = false
            call.reply(copies)
        case "KeepSecret":
            SecretStringWipeTests.retain(call.message)
            keptSecretCalls.mutate { $0.append((UnsafeSendablePointer(call.message), call.arguments)) }
            guard case .string(let label) = call.arguments[0], case .secretString(let secret) = call.arguments[1] else {
                call.reply(error: .invalidArgs("the secret did not arrive as a secret string"))
                return
            }
            // Copies of its own: the call's storage goes with the call.
            let copy = secret.withUnsafeBytes { SecretBytes(copying: $0) }
            call.reply([.secretString(copy), .stringVariantDict([(label, .secretString(copy))])])
        case "WorkUntilAbandoned":
            let stop = ContinuousClock.now + .seconds(60)
            while !call.isAbandoned, ContinuousClock.now < stop { usleep(1000) }
            call.reply { () throws(DBusError) -> [DBusValue] in
                do throws(DBusError) {
                    try call.checkStillWanted()
                } catch {
                    abandonedBy.mutate { $0.append(error.message) }
                    throw error
                }
                return []
            }
        default:
            call.reply(error: .unknownMethod(call.member))
        }
    }

    /// The messages of `WorkUntilAbandoned`'s `checkStillWanted()` errors.
    static let abandonedBy = LockedValue<[String]>([])

    /// Calls the test service from the client connection.
    func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25),
              on connection: DBusConnection? = nil) throws(DBusError) -> [DBusValue] {
        try (connection ?? client).call(destination: Self.name, path: Self.path, interface: Self.interfaceName,
                                        member: member, arguments: arguments, timeout: timeout)
    }
}

/// A libdbus message pointer kept across threads by a test (its reference is the test's).
struct UnsafeSendablePointer: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// Gates for the `Hold` handler: a test knows exactly when handlers are inside (`waitUntilHeld`)
/// and when they may leave (`open`), instead of guessing with sleeps. Gates are named, so tests
/// running at the same time do not share one.
// @unchecked: `held` and `opened` are only touched under `condition`.
final class HandlerGates: @unchecked Sendable {
    static let shared = HandlerGates()
    private let condition = NSCondition()
    private var held: [String: Int] = [:]
    private var opened: Set<String> = []

    /// Called by the handler: counts itself in, then waits for the gate (60 s at most, a hang guard).
    func hold(_ gate: String) {
        condition.lock()
        defer { condition.unlock() }
        held[gate, default: 0] += 1
        condition.broadcast()
        let deadline = Date() + 60
        while !opened.contains(gate), condition.wait(until: deadline) {}
        held[gate, default: 0] -= 1
    }

    /// Waits until `count` handlers are inside `gate` at once; false after `timeout`.
    func waitUntilHeld(_ gate: String, count: Int = 1, timeout: TimeInterval = 30) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date() + timeout
        while held[gate, default: 0] < count {
            guard condition.wait(until: deadline) else { return held[gate, default: 0] >= count }
        }
        return true
    }

    func open(_ gate: String) {
        condition.lock()
        opened.insert(gate)
        condition.broadcast()
        condition.unlock()
    }
}

/// A value behind a lock, for state shared with handlers.
// @unchecked: `stored` is only touched under `lock`.
final class LockedValue<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func mutate<R>(_ body: (inout T) -> R) -> R { lock.withLock { body(&stored) } }
}

/// Waits (polling) until `condition` holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}

func milliseconds(_ duration: Duration) -> Double { duration.inSeconds * 1000 }
