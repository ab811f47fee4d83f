import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

/// Collection signals for changes made through any face (the native API here, as the CLI makes
/// them), collection labels, and the in-memory collection at the last logout, seen by a real
/// subscriber on a private bus.
@Suite struct CollectionSignalTests {
    static let root = "/org/freedesktop/secrets"
    static func collection(_ segment: String) -> String { root + "/collection/" + segment }

    /// Starts keywelld through the Secret Service's name, so both faces are up before anything
    /// the test watches happens.
    private func started() throws -> (SecretServiceFixture, SecretSignals) {
        let fixture = try SecretServiceFixture()
        let signals = try SecretSignals(fixture.client)
        _ = try fixture.service("ReadAlias", [.string("default")])
        return (fixture, signals)
    }

    private func collections(_ fixture: SecretServiceFixture) throws -> [String] {
        try fixture.property(Self.root, "Service", "Collections").objectPathArrayValue ?? []
    }

    @Test func keychainsMadeAndRemovedNativelyAreAnnouncedOnce() throws {
        let (fixture, signals) = try started()
        try fixture.createLogin()
        try fixture.native("CreateKeychain", [.string("spare"), .bytes(Array("pw".utf8))])
        #expect(try collections(fixture) == [Self.collection("login"), Self.collection("spare"), Self.collection("session")])
        try fixture.native("DeleteKeychain", [.string("spare")])
        #expect(try collections(fixture) == [Self.collection("login"), Self.collection("session")])
        try signals.sync(fixture)
        #expect(signals.take(member: ["CollectionCreated", "CollectionDeleted"]) == [
            "CollectionCreated \(Self.collection("login"))",
            "CollectionCreated \(Self.collection("spare"))",
            "CollectionDeleted \(Self.collection("spare"))",
        ])
        // Sent with its value each time, never invalidated: libsecret's CollectionCreated and
        // CollectionDeleted handlers edit the cached list and crash on an invalidated one.
        #expect(signals.collectionsInvalidated == 0)
        #expect(signals.collectionsSent == [
            [Self.collection("login"), Self.collection("session")],
            [Self.collection("login"), Self.collection("spare"), Self.collection("session")],
            [Self.collection("login"), Self.collection("session")],
        ])
    }

    @Test func createCollectionAndCollectionDeleteAnnounceOnceWithTheLabel() throws {
        let (fixture, signals) = try started()
        try fixture.answers("new-pw")
        let label = "Mes clés ★"
        let properties = DBusValue.stringVariantDict(["org.freedesktop.Secret.Collection.Label": .string(label)])
        let reply = try fixture.service("CreateCollection", [properties, .string("default")])
        let (dismissed, result) = try fixture.runPrompt(try reply.objectPath(at: 1))
        #expect(!dismissed)
        let path = try #require(result.objectPathValue)
        #expect(try fixture.property(path, "Collection", "Label") == .string(label))
        #expect(try fixture.native("ListKeychains") == [.stringArray(["Mes cl_s _"])], "the name is the label made safe")
        try signals.sync(fixture)
        #expect(signals.take(member: ["CollectionCreated", "CollectionDeleted"]) == ["CollectionCreated \(path)"])

        #expect(try fixture.call(path, "Collection", "Delete") == [.objectPath("/")])
        try signals.sync(fixture)
        #expect(signals.take(member: ["CollectionCreated", "CollectionDeleted"]) == ["CollectionDeleted \(path)"])
        #expect(try collections(fixture) == [Self.collection("session")])
    }

    /// An item added through the native API is announced to Secret Service clients too: one
    /// ItemCreated on its collection, then the collection's new Items, sent once the native
    /// call's reply is out (so they may come after the caller's next call). No CollectionChanged,
    /// as from gnome-keyring.
    @Test func nativeItemChangesAreAnnouncedOnce() throws {
        let (fixture, signals) = try started()
        try fixture.createLogin()
        try signals.sync(fixture)
        _ = signals.take(member: nil)
        let login = Self.collection("login")
        let changes = SignalWaiter()
        let subscription = try fixture.client.addMatch(DBusMatchRule(path: login, member: "PropertiesChanged")) { changes.deliver($0) }
        defer { subscription.cancel() }
        try fixture.native("Add", [.stringVariantDict([
            "class": .string("genp"), "svce": .string("native-svc"), "acct": .string("nat"), "v_Data": .bytes(Array("pw".utf8)),
        ])])
        #expect(changes.wait { _ in true } != nil)
        try signals.sync(fixture)
        let seen = signals.take(member: nil)
        #expect(seen.count == 2 && seen[0].hasPrefix("ItemCreated \(login)/") && seen[1] == "PropertiesChanged \(login)", "\(seen)")
        let items = try fixture.property(login, "Collection", "Items").objectPathArrayValue ?? []
        #expect(items.count == 1 && seen.first == "ItemCreated \(items[0])")
        #expect(signals.itemsSent(at: login) == [items])
    }

    @Test func aCollectionLabelIsSetKeptAndAnnounced() throws {
        let (fixture, signals) = try started()
        try fixture.createLogin()
        let login = Self.collection("login")
        #expect(try fixture.property(login, "Collection", "Label") == .string("login"), "without a label, the name")
        try fixture.setProperty(login, "Collection", "Label", .string("Login — personal"))
        #expect(try fixture.property(login, "Collection", "Label") == .string("Login — personal"))
        // Through the alias too.
        #expect(try fixture.property(Self.root + "/aliases/default", "Collection", "Label") == .string("Login — personal"))
        try signals.sync(fixture)
        #expect(signals.labelChanges(at: login) == ["Login — personal"])
        #expect(signals.take(member: ["CollectionChanged"]).contains("CollectionChanged \(login)"))

        // Kept in the keychain file: a new daemon shows it.
        try fixture.restartDaemon()
        #expect(try fixture.property(login, "Collection", "Label") == .string("Login — personal"))

        // A locked keychain's label can be read, not changed.
        try fixture.native("Lock", [.string("login")])
        #expect(try fixture.property(login, "Collection", "Label") == .string("Login — personal"))
        expectError("org.freedesktop.Secret.Error.IsLocked") {
            try fixture.setProperty(login, "Collection", "Label", .string("other"))
        }
        expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            try fixture.setProperty(Self.collection("ghost"), "Collection", "Label", .string("x"))
        }
        #expect(!fixture.daemonLog.contains("login-pw"))
    }

    @Test func lockUnlockAndANewDefaultMadeNativelyChangeTheCollections() throws {
        let (fixture, signals) = try started()
        try fixture.createLogin()
        try fixture.native("CreateKeychain", [.string("spare"), .bytes(Array("pw".utf8))])
        try signals.sync(fixture)
        _ = signals.take(member: nil)

        let login = Self.collection("login"), spare = Self.collection("spare")
        try fixture.native("Lock", [.string("spare")])
        try fixture.native("Unlock", [.string("spare"), .bytes(Array("pw".utf8))])
        try fixture.native("LockAll")
        try signals.sync(fixture)
        #expect(signals.lockChanges() == ["\(spare) true", "\(spare) false", "\(login) true", "\(spare) true"])
        #expect(signals.take(member: ["CollectionChanged"]) == [
            "CollectionChanged \(spare)", "CollectionChanged \(spare)", "CollectionChanged \(login)", "CollectionChanged \(spare)",
        ])

        try fixture.native("SetDefaultKeychain", [.string("spare")])
        #expect(try fixture.service("ReadAlias", [.string("default")]) == [.objectPath(spare)])
        #expect(try collections(fixture).first == spare, "the default comes first")
        try signals.sync(fixture)
        #expect(signals.take(member: ["CollectionChanged", "CollectionCreated", "CollectionDeleted"])
                == ["CollectionChanged \(login)", "CollectionChanged \(spare)"], "the collection the alias left, then the one it joined")
        #expect(signals.collectionsInvalidated == 0)
        #expect(!signals.collectionsSent.isEmpty)
    }

    @Test func theSessionCollectionIsEmptiedAtTheLastLogout() throws {
        let (fixture, signals) = try started()
        let session = try fixture.openSession()
        let memory = Self.collection("session")
        let first = try fixture.createItem(["app": "a"], in: memory, session: session)
        let second = try fixture.createItem(["app": "b"], in: memory, session: session)
        let control = fixture.bus.runtimeDirectory + "/keywell/control"
        #expect(try ControlClient.send(socket: control, op: "O").status == 0)
        #expect(try ControlClient.send(socket: control, op: "O").status == 0)
        #expect(try ControlClient.send(socket: control, op: "C").status == 0)
        #expect(try fixture.property(memory, "Collection", "Items").objectPathArrayValue == [first, second], "one session is still open")

        #expect(try ControlClient.send(socket: control, op: "C").status == 0)
        #expect(try fixture.property(memory, "Collection", "Items").objectPathArrayValue == [])
        #expect(try fixture.search(["app": "a"]) == ([], []))
        try signals.sync(fixture)
        #expect(signals.take(member: ["ItemDeleted"]) == ["ItemDeleted \(first)", "ItemDeleted \(second)"])
        #expect(fixture.daemonLog.contains("forgot 2 item(s) of the session collection"))

        // The next login's session collection works as before.
        let third = try fixture.createItem(["app": "c"], in: memory, session: session)
        #expect(try fixture.getSecret(third, session: session) == "secret")
    }

    @Test func deletingTheSessionCollectionSendsItemDeleted() throws {
        let (fixture, signals) = try started()
        let session = try fixture.openSession()
        let memory = Self.collection("session")
        let item = try fixture.createItem(["app": "a"], in: memory, session: session)
        #expect(try fixture.call(memory, "Collection", "Delete") == [.objectPath("/")])
        try signals.sync(fixture)
        #expect(signals.take(member: ["ItemDeleted", "CollectionDeleted"]) == ["ItemDeleted \(item)"], "the collection itself stays")
    }
}

/// Every signal keywelld sends under /org/freedesktop/secrets, in order.
// @unchecked: the counters are only touched under `lock`; the waiter locks itself.
final class SecretSignals: @unchecked Sendable {
    private let waiter = SignalWaiter()
    private let subscription: DBusSignalSubscription
    private let lock = NSLock()
    private var taken = 0
    private var syncs = 0

    init(_ client: DBusConnection) throws {
        let waiter = self.waiter
        subscription = try client.addMatch(DBusMatchRule(pathNamespace: CollectionSignalTests.root)) { waiter.deliver($0) }
    }

    deinit { subscription.cancel() }

    /// Returns once every signal sent before it has arrived: it makes the daemon send one more
    /// (a new label on the in-memory collection) and waits for that one, since a bus delivers one
    /// sender's signals in order.
    func sync(_ fixture: SecretServiceFixture) throws {
        let token = lock.withLock { () -> String in
            syncs += 1
            return "sync \(syncs)"
        }
        try fixture.setProperty(CollectionSignalTests.collection("session"), "Collection", "Label", .string(token))
        guard waiter.wait(timeout: 20, where: { Self.label(in: $0) == token }) != nil else {
            throw TestSupportError("the sync signal never came")
        }
    }

    /// "Member path-or-argument" of the signals named (nil: all) since the last take, leaving out
    /// those of syncs; later takes start after them.
    func take(member names: Set<String>?) -> [String] {
        let all = waiter.all
        let fresh = lock.withLock { () -> ArraySlice<DBusSignal> in
            defer { taken = all.count }
            return all[min(taken, all.count)...]
        }
        return fresh.filter { signal in
            !isSync(signal) && (names?.contains(signal.member) ?? true)
        }.map { "\($0.member) \($0.arguments.first?.objectPathValue ?? $0.path)" }
    }

    /// New `Label` values sent for the collection at `path` (syncs left out).
    func labelChanges(at path: String) -> [String] {
        waiter.all.filter { $0.path == path }.compactMap(Self.label(in:)).filter { !$0.hasPrefix("sync ") }
    }

    /// "path locked" for each `Locked` change sent.
    func lockChanges() -> [String] {
        waiter.all.compactMap { signal in
            guard signal.member == "PropertiesChanged", signal.arguments.count == 3,
                  case .bool(let locked)? = signal.arguments[1].asStringVariantDict()?["Locked"]?.unwrappingVariants
            else { return nil }
            return "\(signal.path) \(locked)"
        }
    }

    /// Each `Items` value sent for the collection at `path`.
    func itemsSent(at path: String) -> [[String]] {
        waiter.all.filter { $0.member == "PropertiesChanged" && $0.path == path && $0.arguments.count == 3 }
            .compactMap { $0.arguments[1].asStringVariantDict()?["Items"]?.unwrappingVariants.objectPathArrayValue }
    }

    /// How many times `Collections` was invalidated (libsecret crashes on it: never wanted).
    var collectionsInvalidated: Int {
        waiter.all.filter { $0.member == "PropertiesChanged" && $0.path == CollectionSignalTests.root
            && ($0.arguments.last?.stringArrayValue ?? []).contains("Collections") }.count
    }

    /// Each value `Collections` was sent with, in order.
    var collectionsSent: [[String]] {
        waiter.all.compactMap { signal in
            guard signal.member == "PropertiesChanged", signal.path == CollectionSignalTests.root, signal.arguments.count == 3
            else { return nil }
            return signal.arguments[1].asStringVariantDict()?["Collections"]?.unwrappingVariants.objectPathArrayValue
        }
    }

    private static func label(in signal: DBusSignal) -> String? {
        guard signal.member == "PropertiesChanged", signal.arguments.count == 3 else { return nil }
        return signal.arguments[1].asStringVariantDict()?["Label"]?.unwrappingVariants.stringValue
    }

    private func isSync(_ signal: DBusSignal) -> Bool {
        guard signal.path == CollectionSignalTests.collection("session") || signal.arguments.first?.objectPathValue == CollectionSignalTests.collection("session") else { return false }
        return signal.member == "PropertiesChanged" || signal.member == "CollectionChanged"
    }
}

extension SecretServiceFixture {
    /// Stops keywelld (SIGTERM) and waits until it is gone; the next call starts a new one.
    func restartDaemon() throws {
        let pid = pid_t(try client.unixProcessID(of: "org.keywell.Keychain"))
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(20)
        while try client.nameHasOwner("org.keywell.Keychain") || client.nameHasOwner(Self.service) || kill(pid, 0) == 0 {
            guard Date() < deadline else { throw TestSupportError("keywelld (pid \(pid)) did not exit") }
            usleep(20_000)
        }
    }
}
