import Foundation
import KeywellDBus
import KeywellTestSupport
import SecretServiceCrypto
import Testing

/// A private session bus whose activation files start the real `keywelld` for both of its names
/// (fast KDF, verbose log in the bus's folder, a scripted pinentry), and a client connection.
// @unchecked: immutable after init; the bus and connections it holds are thread-safe.
final class SecretServiceFixture: @unchecked Sendable {
    static let service = "org.freedesktop.secrets"
    static let root = "/org/freedesktop/secrets"
    static let dh = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    let bus: PrivateSessionBus
    let client: DBusConnection
    let logPath: String
    let answersPath: String
    let pinentryLogPath: String

    /// The built daemon: `$KEYWELLD`, else `keywelld` next to the test bundle.
    static var keywelldPath: String {
        if let path = ProcessInfo.processInfo.environment["KEYWELLD"], !path.isEmpty { return path }
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ((bundle as NSString).deletingLastPathComponent as NSString).appendingPathComponent("keywelld")
    }

    /// A pinentry in sh: GETPIN answers the first line of the answers file (and drops it);
    /// `CANCEL` or no line left is the Cancel button.
    static let pinentryScript = """
        #!/bin/sh
        echo "OK Pleased to meet you"
        while IFS= read -r line; do
          printf '%s\\n' "$line" >> "$PINENTRY_LOG"
          case "$line" in
            GETPIN*)
              answer=$(head -n 1 "$PINENTRY_ANSWERS" 2>/dev/null)
              sed -i 1d "$PINENTRY_ANSWERS" 2>/dev/null
              if [ -z "$answer" ] || [ "$answer" = CANCEL ]; then
                echo "ERR 83886179 Operation cancelled <Pinentry>"
              else
                echo "D $answer"; echo OK
              fi ;;
            BYE*) echo "OK closing connection"; exit 0 ;;
            *) echo OK ;;
          esac
        done

        """

    /// `environment`: more variables for keywelld (test hooks), as `NAME=value` words.
    init(arguments: String = "", environment: String = "", activation: Bool = true) throws {
        bus = try PrivateSessionBus()
        logPath = bus.directory.subpath("keywelld.log")
        answersPath = bus.directory.subpath("answers")
        pinentryLogPath = bus.directory.subpath("pinentry.log")
        let pinentry = try bus.directory.write(Self.pinentryScript, to: "pinentry", mode: 0o755)
        let wrapper = try bus.directory.write("""
            #!/bin/sh
            export KEYWELL_TEST_FAST_KDF=1 KEYWELL_PINENTRY='\(pinentry)'
            export PINENTRY_ANSWERS='\(answersPath)' PINENTRY_LOG='\(pinentryLogPath)' \(environment)
            exec '\(Self.keywelldPath)' --verbose \(arguments) 2>>'\(logPath)'

            """, to: "keywelld-test", mode: 0o755)
        if activation {
            try bus.installService(name: "org.keywell.Keychain", exec: wrapper)
            try bus.installService(name: Self.service, exec: wrapper)
        }
        client = try bus.connect()
    }

    deinit {
        client.close()
        bus.stop()
    }

    var daemonLog: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    var pinentryLog: String { (try? String(contentsOfFile: pinentryLogPath, encoding: .utf8)) ?? "" }

    /// What the next GETPINs answer (nil: Cancel).
    func answers(_ answers: String?...) throws {
        try answers.map { $0 ?? "CANCEL" }.joined(separator: "\n").appending("\n")
            .write(toFile: answersPath, atomically: true, encoding: .utf8)
    }

    // MARK: Calls

    @discardableResult
    func native(_ member: String, _ arguments: [DBusValue] = []) throws -> [DBusValue] {
        try client.call(destination: "org.keywell.Keychain", path: "/org/keywell/Keychain", interface: "org.keywell.Keychain1",
                        member: member, arguments: arguments)
    }

    @discardableResult
    func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
              on connection: DBusConnection? = nil) throws(DBusError) -> [DBusValue] {
        try (connection ?? client).call(destination: Self.service, path: path, interface: "org.freedesktop.Secret." + interface,
                                        member: member, arguments: arguments, timeout: .seconds(20))
    }

    @discardableResult
    func service(_ member: String, _ arguments: [DBusValue] = [], on connection: DBusConnection? = nil) throws(DBusError) -> [DBusValue] {
        try call(Self.root, "Service", member, arguments, on: connection)
    }

    func property(_ path: String, _ interface: String, _ name: String) throws(DBusError) -> DBusValue {
        let reply = try client.call(destination: Self.service, path: path, interface: "org.freedesktop.DBus.Properties",
                                    member: "Get", arguments: [.string("org.freedesktop.Secret." + interface), .string(name)])
        return reply[0].variantValue ?? reply[0]
    }

    func setProperty(_ path: String, _ interface: String, _ name: String, _ value: DBusValue) throws(DBusError) {
        _ = try client.call(destination: Self.service, path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
                        arguments: [.string("org.freedesktop.Secret." + interface), .string(name), .variant(value)])
    }

    /// The login keychain (password "login-pw"), the default as after a first login.
    func createLogin() throws {
        try native("CreateKeychain", [.string("login"), .bytes(Array("login-pw".utf8))])
    }

    // MARK: Sessions and secrets

    /// A session of `connection` (default: the client): plain, or DH with its cipher.
    func openSession(dh: Bool = false, on connection: DBusConnection? = nil) throws -> ClientSession {
        guard dh else {
            let reply = try service("OpenSession", [.string("plain"), .variant(.string(""))], on: connection)
            return ClientSession(path: try reply.objectPath(at: 1), cipher: nil)
        }
        let exchange = try DHKeyExchange()
        // libsecret sends its key unpadded: strip leading zeros as it does.
        let publicKey = Array(exchange.publicKey.drop(while: { $0 == 0 }))
        let reply = try service("OpenSession", [.string(Self.dh), .variant(.bytes(publicKey))], on: connection)
        guard let serverKey = reply[0].variantValue?.bytesValue else { throw TestSupportError("no server key in \(reply)") }
        return ClientSession(path: try reply.objectPath(at: 1),
                             cipher: AESCBCCipher(key: try exchange.deriveKey(peerPublicKey: serverKey)))
    }

    /// Creates an item in `collection` (a path, default the default alias); returns its path.
    @discardableResult
    func createItem(_ attributes: [String: String], label: String = "label", secret: String = "secret",
                    in collection: String = "/org/freedesktop/secrets/aliases/default", replace: Bool = false,
                    session: ClientSession) throws -> String {
        let properties = DBusValue.stringVariantDict([
            "org.freedesktop.Secret.Item.Label": .string(label),
            "org.freedesktop.Secret.Item.Attributes": .stringStringDict(attributes),
        ])
        let reply = try call(collection, "Collection", "CreateItem",
                             [properties, try session.encode(secret), .bool(replace)])
        #expect(try reply.objectPath(at: 1) == "/")
        return try reply.objectPath(at: 0)
    }

    func getSecret(_ item: String, session: ClientSession) throws -> String {
        let reply = try call(item, "Item", "GetSecret", [.objectPath(session.path)])
        return try session.decode(reply[0])
    }

    func search(_ attributes: [String: String]) throws -> (unlocked: [String], locked: [String]) {
        let reply = try service("SearchItems", [.stringStringDict(attributes)])
        return (try reply.objectPathArray(at: 0), try reply.objectPathArray(at: 1))
    }

    // MARK: Prompts

    /// Calls Prompt on `path` and waits for Completed: (dismissed, result).
    func runPrompt(_ path: String, timeout: TimeInterval = 20) throws -> (dismissed: Bool, result: DBusValue) {
        let completed = SignalWaiter()
        let subscription = try client.addMatch(DBusMatchRule(path: path, interface: "org.freedesktop.Secret.Prompt",
                                                             member: "Completed")) { completed.deliver($0) }
        defer { subscription.cancel() }
        try call(path, "Prompt", "Prompt", [.string("")])
        guard let signal = completed.wait(timeout: timeout) else { throw TestSupportError("no Completed from \(path)") }
        return (try signal.arguments.bool(at: 0), signal.arguments[1].variantValue ?? signal.arguments[1])
    }
}

/// The client's side of a session.
struct ClientSession {
    let path: String
    let cipher: AESCBCCipher?

    func encode(_ secret: String, contentType: String = "text/plain") throws -> DBusValue {
        guard let cipher else {
            return .structure([.objectPath(path), .bytes([]), .bytes(Array(secret.utf8)), .string(contentType)])
        }
        let (iv, ciphertext) = try cipher.seal(Array(secret.utf8))
        return .structure([.objectPath(path), .bytes(iv), .bytes(ciphertext), .string(contentType)])
    }

    func decode(_ value: DBusValue) throws -> String {
        guard let fields = value.structureFields, fields.count == 4, let parameters = fields[1].bytesValue,
              let payload = fields[2].bytesValue else { throw TestSupportError("not a secret: \(value)") }
        #expect(fields[0].objectPathValue == path)
        guard let cipher else {
            #expect(parameters.isEmpty)
            return String(decoding: payload, as: UTF8.self)
        }
        #expect(parameters.count == 16)
        return String(decoding: try cipher.open(iv: parameters, ciphertext: payload), as: UTF8.self)
    }
}

/// Collects signals; `wait` returns the first (or nil after the timeout).
// @unchecked: `received` is only touched under `condition`.
final class SignalWaiter: @unchecked Sendable {
    private let condition = NSCondition()
    private var received: [DBusSignal] = []

    func deliver(_ signal: DBusSignal) {
        condition.withLock {
            received.append(signal)
            condition.broadcast()
        }
    }

    var all: [DBusSignal] { condition.withLock { received } }

    func wait(timeout: TimeInterval = 10, where matches: (DBusSignal) -> Bool = { _ in true }) -> DBusSignal? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let found = received.first(where: matches) { return found }
            guard condition.wait(until: deadline) else { return received.first(where: matches) }
        }
    }
}

/// Expects `body` to fail with the D-Bus error `name`.
func expectError(_ name: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(name), the call succeeded", sourceLocation: sourceLocation)
    } catch let error as DBusError {
        #expect(error.name == name, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}
