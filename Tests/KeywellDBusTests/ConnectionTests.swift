import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

@Suite("Calls, errors, signals, introspection, properties")
struct ConnectionTests {
    let fixture: ServiceFixture
    init() throws { fixture = try ServiceFixture() }

    @Test func uniqueNamesAndPing() throws {
        #expect(fixture.client.uniqueName?.hasPrefix(":") == true)
        #expect(fixture.client.uniqueName != fixture.server.uniqueName)
        // libdbus answers Peer itself, on any path, registered or not.
        try fixture.client.ping(ServiceFixture.name)
        try fixture.client.ping(ServiceFixture.name, path: "/nothing/here")
        let machineID = try fixture.client.call(destination: ServiceFixture.name, path: "/", interface: StandardInterface.peer,
                                                member: "GetMachineId")
        #expect(machineID.first?.stringValue?.isEmpty == false)
    }

    @Test func errorRepliesReachTheCaller() throws {
        do {
            _ = try fixture.call("Fail", [.string("org.keywell.Keychain1.Error.DuplicateItem"),
                                          .string("-25299: The specified item already exists in the keychain.")])
            Issue.record("expected an error")
        } catch {
            #expect(error.name == "org.keywell.Keychain1.Error.DuplicateItem")
            #expect(error.message == "-25299: The specified item already exists in the keychain.")
        }
    }

    @Test func unknownMethodObjectAndInterface() throws {
        let cases: [(String?, String, String, String)] = [
            (ServiceFixture.interfaceName, ServiceFixture.path, "NoSuchMethod", DBusError.Name.unknownMethod),
            // Nothing at the path: UnknownMethod, as libdbus and GDBus answer (clients read it as "not found").
            (ServiceFixture.interfaceName, "/no/such/object", "Echo", DBusError.Name.unknownMethod),
            (StandardInterface.properties, "/no/such/object", "GetAll", DBusError.Name.unknownMethod),
            (nil, "/no/such/object", "Echo", DBusError.Name.unknownMethod),
            ("org.keywell.Nope", ServiceFixture.path, "Echo", DBusError.Name.unknownInterface),
            (nil, ServiceFixture.path, "NoSuchMethod", DBusError.Name.unknownMethod),
        ]
        for (interface, path, member, expected) in cases {
            do {
                _ = try fixture.client.call(destination: ServiceFixture.name, path: path, interface: interface, member: member)
                Issue.record("\(member) at \(path) should fail")
            } catch {
                #expect(error.name == expected, "\(interface ?? "-") \(path) \(member): \(error)")
            }
        }
        // Without an interface the method is found by name.
        #expect(try fixture.client.call(destination: ServiceFixture.name, path: ServiceFixture.path, interface: nil,
                                        member: "Echo", arguments: [.int32(1)]) == [.int32(1)])
    }

    @Test func wrongSignatureGetsInvalidArgsAndTheServiceGoesOn() throws {
        for bad: [DBusValue] in [[], [.string("x")], [.stringStringDict(["a": "b"])], [.stringVariantDict([:]), .int32(1)]] {
            do {
                _ = try fixture.call("CountKeys", bad)
                Issue.record("CountKeys(\(bad.signature)) should fail")
            } catch {
                #expect(error.name == DBusError.Name.invalidArgs)
            }
        }
        #expect(try fixture.call("CountKeys", [.stringVariantDict(["a": .int32(1), "b": .bool(false)])]) == [.uint32(2)])
    }

    @Test func byteArraysOfACallAreWipedOnceItIsDone() throws {
        let fixture = try ServiceFixture()
        let secret = Array("a secret that must not linger".utf8)
        let arguments: [DBusValue] = [.string("label"), .bytes(secret), .stringVariantDict(["v_Data": .bytes(secret)])]
        // The reply carries the bytes intact: wiping happens after it is written.
        #expect(try fixture.call("Keep", arguments) == arguments)
        var keptBytes: [[UInt8]] = []
        let deadline = ContinuousClock.now + .seconds(5)
        repeat {
            let kept = ServiceFixture.kept.value
            keptBytes = [kept[1].bytesValue ?? [], kept[2].asStringVariantDict()?["v_Data"]?.bytesValue ?? []]
            if keptBytes.allSatisfy({ $0.allSatisfy { $0 == 0 } }) { break }
            usleep(10_000)
        } while ContinuousClock.now < deadline
        // The handler kept the arrays without copying them: it sees zeros now, of the same length.
        #expect(keptBytes.map(\.count) == [secret.count, secret.count])
        #expect(keptBytes.allSatisfy { $0.allSatisfy { $0 == 0 } })
        #expect(ServiceFixture.kept.value[0] == .string("label"))
    }

    /// A reply whose byte arrays the handler declared public (encrypted secrets) is not wiped:
    /// the handler's own copy keeps its bytes after the reply went out.
    @Test func repliesDeclaredPublicAreNotWiped() throws {
        let fixture = try ServiceFixture()
        let ciphertext: [UInt8] = Array(repeating: 0xA5, count: 48)
        #expect(try fixture.call("KeepPublic", [.bytes(ciphertext)]) == [.bytes(ciphertext)])
        // A round trip later, the reply's wipe would have run long ago.
        #expect(try fixture.call("Echo", [.string("after")]) == [.string("after")])
        #expect(ServiceFixture.keptPublic.value == [.bytes(ciphertext)])
    }

    @Test func repliesFromAnotherThreadLaterAndDroppedCalls() throws {
        #expect(try fixture.call("ReplyLater", [.uint32(50)]) == [.string("later")])
        do {
            _ = try fixture.call("Forget", timeout: .seconds(5))
            Issue.record("expected an error")
        } catch {
            #expect(error.name == DBusError.Name.failed)
            #expect(!error.isTimeout)
        }
    }

    /// What a handler leaves for after its reply (another face's signals) runs once the reply
    /// is out, and also for a call dropped without one; `current` is the call only inside it.
    @Test func workForAfterTheReply() throws {
        ServiceFixture.afterReplyRuns.value = []
        #expect(try fixture.call("AfterReply") == [.bool(true)])
        try waitUntil { ServiceFixture.afterReplyRuns.value.count == 2 }
        #expect(ServiceFixture.afterReplyRuns.value == [true, true])
        #expect(DBusMethodCall.current == nil)

        ServiceFixture.afterReplyRuns.value = []
        #expect(throws: DBusError.self) { try fixture.call("AfterReplyDrop", timeout: .seconds(5)) }
        try waitUntil { ServiceFixture.afterReplyRuns.value.count == 1 }
        #expect(ServiceFixture.afterReplyRuns.value == [false])
    }

    private func waitUntil(_ condition: () -> Bool) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "timed out")
            usleep(1000)
        }
    }

    @Test func callTimeout() throws {
        // The handler cannot reply before its gate opens, so the call can only end by its timeout.
        let gate = UUID().uuidString
        defer { HandlerGates.shared.open(gate) }
        let start = ContinuousClock.now
        do {
            _ = try fixture.call("Hold", [.string(gate)], timeout: .milliseconds(200))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.isTimeout)
            #expect(error.name == DBusError.Name.noReply)
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(190), "timed out early: \(elapsed)")
        HandlerGates.shared.open(gate)
        // The connection is fine afterwards.
        #expect(try fixture.call("Echo", [.string("after")]) == [.string("after")])
    }

    @Test func asyncCalls() async throws {
        let gate = UUID().uuidString
        defer { HandlerGates.shared.open(gate) }
        let reply = try await fixture.client.callAsync(destination: ServiceFixture.name, path: ServiceFixture.path,
                                                       interface: ServiceFixture.interfaceName, member: "Echo", arguments: [.string("a")])
        #expect(reply == [.string("a")])
        do {
            // No reply before the gate opens: only the timeout can end the call.
            _ = try await fixture.client.callAsync(destination: ServiceFixture.name, path: ServiceFixture.path,
                                                   interface: ServiceFixture.interfaceName, member: "Hold",
                                                   arguments: [.string(gate)], timeout: .milliseconds(100))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.isTimeout)
        }
    }

    @Test func signalsReachSubscribers() throws {
        let received = LockedValue<[String]>([])
        let subscription = try fixture.client.addMatch(
            DBusMatchRule(path: ServiceFixture.path, interface: ServiceFixture.interfaceName, member: "Said")
        ) { signal in
            received.mutate { $0.append(signal.arguments.first?.stringValue ?? "?") }
        }
        let other = LockedValue(0)
        _ = try fixture.client.addMatch(DBusMatchRule(interface: ServiceFixture.interfaceName, member: "Said", arguments: [0: "two"])) { _ in
            other.mutate { $0 += 1 }
        }
        for text in ["one", "two", "three"] { _ = try fixture.call("Emit", [.string(text)]) }
        #expect(eventually { received.value.count == 3 })
        #expect(received.value == ["one", "two", "three"])  // in order
        #expect(eventually { other.value == 1 })

        subscription.cancel()
        _ = try fixture.call("Emit", [.string("four")])
        // Then a signal the live subscription takes: signals reach a connection in order, so once
        // it is in, "four" has been handed out too, and the cancelled subscription must not have it.
        _ = try fixture.call("Emit", [.string("two")])
        #expect(eventually { other.value == 2 })
        #expect(received.value.count == 3)
    }

    @Test func nameOwnerChangedWhenAClientLeaves() throws {
        let gone = LockedValue<[String]>([])
        _ = try fixture.server.addMatch(.nameOwnerChanged()) { signal in
            if signal.arguments.count == 3, signal.arguments[2].stringValue == "", let name = signal.arguments[0].stringValue {
                gone.mutate { $0.append(name) }
            }
        }
        let transient = try fixture.bus.connect()
        let name = try #require(transient.uniqueName)
        transient.close()
        #expect(eventually { gone.value.contains(name) })
    }

    @Test func introspection() throws {
        let xml = try fixture.client.call(destination: ServiceFixture.name, path: ServiceFixture.path,
                                          interface: StandardInterface.introspectable, member: "Introspect").string(at: 0)
        #expect(xml.contains("<interface name=\"org.keywell.Test1\">"))
        #expect(xml.contains("<method name=\"CountKeys\">"))
        #expect(xml.contains("<arg name=\"dict\" type=\"a{sv}\" direction=\"in\"/>"))
        #expect(xml.contains("<signal name=\"Said\">"))
        #expect(xml.contains("<property name=\"Label\" type=\"s\" access=\"readwrite\"/>"))
        #expect(xml.contains("org.freedesktop.DBus.Properties"))
        // Parents list their children.
        let root = try fixture.client.call(destination: ServiceFixture.name, path: "/org/keywell",
                                           interface: StandardInterface.introspectable, member: "Introspect").string(at: 0)
        #expect(root.contains("<node name=\"Test\"/>"))
        // What we write, we read back.
        let parsed = try DBusInterface.parse(introspectionXML: xml)
        #expect(parsed.first { $0.name == ServiceFixture.interfaceName } == ServiceFixture.interface)
    }

    @Test func everyCallIsCheckedAgainstItsDeclaredSignatureBeforeItsHandler() throws {
        // Fail(ss) no longer checks its own arguments: a call that reached it with anything
        // else would throw the first string as an error name, or trap on a missing one.
        let calls: [(String?, String, String, [DBusValue])] = [
            (ServiceFixture.interfaceName, ServiceFixture.path, "Fail", []),
            (ServiceFixture.interfaceName, ServiceFixture.path, "Fail", [.string("org.x.Error.Reached")]),
            (ServiceFixture.interfaceName, ServiceFixture.path, "Fail", [.string("org.x.Error.Reached"), .string("m"), .string("extra")]),
            (ServiceFixture.interfaceName, ServiceFixture.path, "Fail", [.string("org.x.Error.Reached"), .variant(.string("m"))]),
            (nil, ServiceFixture.path, "Fail", [.string("org.x.Error.Reached")]),
            (ServiceFixture.interfaceName, ServiceFixture.path, "Forget", [.string("x")]),
            (StandardInterface.introspectable, ServiceFixture.path, "Introspect", [.string("x")]),
            (nil, ServiceFixture.path, "Introspect", [.string("x")]),
            (StandardInterface.introspectable, "/no/such/object", "Introspect", [.string("x")]),
            (StandardInterface.properties, ServiceFixture.path, "Get", [.string(ServiceFixture.interfaceName)]),
            (StandardInterface.properties, ServiceFixture.path, "Get", [.string(ServiceFixture.interfaceName), .string("Label"), .bool(true)]),
            (StandardInterface.properties, ServiceFixture.path, "GetAll", []),
            (StandardInterface.properties, ServiceFixture.path, "GetAll", [.objectPath("/")]),
            (StandardInterface.properties, ServiceFixture.path, "Set", [.string(ServiceFixture.interfaceName), .string("Label"), .string("x")]),
        ]
        for (interface, path, member, arguments) in calls {
            do {
                _ = try fixture.client.call(destination: ServiceFixture.name, path: path, interface: interface,
                                            member: member, arguments: arguments)
                Issue.record("\(member)(\(arguments.signature)) should fail")
            } catch {
                #expect(error.name == DBusError.Name.invalidArgs, "\(member)(\(arguments.signature)): \(error)")
                #expect(error.message.contains("expected"), "\(error)")
            }
        }
        #expect(fixture.label.value == "initial")
        // The declared shapes go through; Introspect answers on any path, with what is below it.
        do {
            _ = try fixture.call("Fail", [.string("org.x.Error.Reached"), .string("m")])
            Issue.record("Fail should fail")
        } catch {
            #expect(error.name == "org.x.Error.Reached")
        }
        let empty = try fixture.client.call(destination: ServiceFixture.name, path: "/no/such/object",
                                            interface: StandardInterface.introspectable, member: "Introspect").string(at: 0)
        #expect(empty.contains("<node>\n</node>"))
        #expect(try fixture.client.call(destination: ServiceFixture.name, path: ServiceFixture.path, interface: nil,
                                        member: "Introspect").string(at: 0).contains("org.keywell.Test1"))
    }

    @Test func parsesTheKeychainInterfaceFile() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../dbus/org.keywell.Keychain1.xml")
        let xml = try String(contentsOf: url, encoding: .utf8)
        let interfaces = try DBusInterface.parse(introspectionXML: xml)
        let keychain = try #require(interfaces.first { $0.name == "org.keywell.Keychain1" })
        #expect(keychain.method(named: "Add")?.inputSignature == "a{sv}")
        #expect(keychain.method(named: "CopyMatching")?.outputSignature == "aa{sv}")
    }

    @Test func properties() throws {
        func properties(_ member: String, _ arguments: [DBusValue]) throws(DBusError) -> [DBusValue] {
            try fixture.client.call(destination: ServiceFixture.name, path: ServiceFixture.path,
                                    interface: StandardInterface.properties, member: member, arguments: arguments)
        }
        #expect(try properties("Get", [.string(ServiceFixture.interfaceName), .string("Label")]) == [.variant(.string("initial"))])
        _ = try properties("Set", [.string(ServiceFixture.interfaceName), .string("Label"), .variant(.string("changed"))])
        #expect(fixture.label.value == "changed")
        let all = try properties("GetAll", [.string(ServiceFixture.interfaceName)])
        #expect(all.first?.asStringVariantDict() == ["Label": .string("changed"), "Count": .uint32(7)])

        let failures: [([DBusValue], String, String)] = [
            ([.string(ServiceFixture.interfaceName), .string("Count"), .variant(.uint32(1))], "Set", DBusError.Name.propertyReadOnly),
            ([.string(ServiceFixture.interfaceName), .string("Label"), .variant(.int32(1))], "Set", DBusError.Name.invalidArgs),
            ([.string(ServiceFixture.interfaceName), .string("Nope")], "Get", DBusError.Name.unknownProperty),
            ([.string("org.keywell.Nope"), .string("Label")], "Get", DBusError.Name.unknownInterface),
            ([.int32(1)], "Get", DBusError.Name.invalidArgs),
        ]
        for (arguments, member, expected) in failures {
            do {
                _ = try properties(member, arguments)
                Issue.record("\(member)\(arguments) should fail")
            } catch {
                #expect(error.name == expected, "\(member)\(arguments): \(error)")
            }
        }

        let changes = LockedValue<[DBusValue]>([])
        _ = try fixture.client.addMatch(DBusMatchRule(path: ServiceFixture.path, interface: StandardInterface.properties,
                                                      member: "PropertiesChanged")) { signal in
            changes.mutate { $0.append(contentsOf: signal.arguments) }
        }
        try fixture.server.emitPropertiesChanged(path: ServiceFixture.path, interface: ServiceFixture.interfaceName,
                                                 changed: ["Label": .string("x")], invalidated: ["Count"])
        #expect(eventually { changes.value.count == 3 })
        #expect(changes.value == [.string(ServiceFixture.interfaceName), .stringVariantDict(["Label": .string("x")]), .stringArray(["Count"])])
    }

    @Test func subtreeObjects() throws {
        final class Collections: DBusObject {
            let interface = DBusInterface(name: "org.freedesktop.Secret.Item", methods: [DBusMethod(name: "Where")],
                                          properties: [DBusProperty(name: "Label", signature: .string)])
            func interfaces(at path: String) -> [DBusInterface]? {
                path.hasPrefix("/org/freedesktop/secrets/collection/login/") ? [interface] : nil
            }
            func childNodes(at path: String) -> [String] {
                path == "/org/freedesktop/secrets/collection/login" ? ["1", "2"] : []
            }
            func handle(_ call: DBusMethodCall) { call.reply([.objectPath(call.path)]) }
            func property(_ name: String, interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> DBusValue {
                .string("item " + (path.split(separator: "/").last.map(String.init) ?? ""))
            }
        }
        try fixture.server.registerSubtree(Collections(), at: "/org/freedesktop/secrets")
        let item = "/org/freedesktop/secrets/collection/login/2"
        #expect(try fixture.client.call(destination: ServiceFixture.name, path: item, interface: "org.freedesktop.Secret.Item",
                                        member: "Where") == [.objectPath(item)])
        #expect(try fixture.client.call(destination: ServiceFixture.name, path: item, interface: StandardInterface.properties,
                                        member: "Get", arguments: [.string("org.freedesktop.Secret.Item"), .string("Label")])
                == [.variant(.string("item 2"))])
        #expect(throws: DBusError.self) {
            try fixture.client.call(destination: ServiceFixture.name, path: "/org/freedesktop/secrets/collection/other/1",
                                    interface: "org.freedesktop.Secret.Item", member: "Where")
        }
        let listing = try fixture.client.call(destination: ServiceFixture.name, path: "/org/freedesktop/secrets/collection/login",
                                              interface: StandardInterface.introspectable, member: "Introspect").string(at: 0)
        #expect(listing.contains("<node name=\"1\"/>") && listing.contains("<node name=\"2\"/>"))
        #expect(throws: DBusError.self) { try fixture.server.registerSubtree(Collections(), at: "/org/freedesktop/secrets") }

        // The deepest subtree answers; a path that only starts with the same letters is not inside.
        try fixture.server.registerSubtree(
            DBusClosureObject(interfaces: [DBusInterface(name: "org.example.Deep", methods: [DBusMethod(name: "Where")])]) { call in
                call.reply([.string("deep")])
            }, at: "/org/freedesktop/secrets/collection/login/deep")
        #expect(try fixture.client.call(destination: ServiceFixture.name, path: "/org/freedesktop/secrets/collection/login/deep/x",
                                        interface: "org.example.Deep", member: "Where") == [.string("deep")])
        #expect(throws: DBusError.self) {
            try fixture.client.call(destination: ServiceFixture.name, path: "/org/freedesktop/secretsmore/collection/login/2",
                                    interface: "org.freedesktop.Secret.Item", member: "Where")
        }
    }

    /// The path and interface are matched in place (the registry's and the tables' own strings
    /// stand in for them): the handler still sees exactly what the caller sent, at a subtree's
    /// root, below it, and with the interface left out.
    @Test func pathAndInterfaceReachTheHandlerAsSent() throws {
        let interface = DBusInterface(name: "org.example.Tree.Node", methods: [DBusMethod(name: "Where")])
        try fixture.server.registerSubtree(
            DBusClosureObject(interfaces: [DBusInterface(name: "org.example.Other"), interface]) { call in
                call.reply([.objectPath(call.path), .string(call.interface ?? "-")])
            }, at: "/org/example/tree")
        for path in ["/org/example/tree", "/org/example/tree/a", "/org/example/tree/a/longer/path/below/the/root"] {
            #expect(try fixture.client.call(destination: ServiceFixture.name, path: path, interface: interface.name,
                                            member: "Where") == [.objectPath(path), .string(interface.name)])
            #expect(try fixture.client.call(destination: ServiceFixture.name, path: path, interface: nil,
                                            member: "Where") == [.objectPath(path), .string("-")])
        }
        // Same length as the declared name, one letter apart: not that interface.
        #expect(throws: DBusError.self) {
            try fixture.client.call(destination: ServiceFixture.name, path: "/org/example/tree", interface: "org.example.Tree.Nodf",
                                    member: "Where")
        }
    }

    @Test func requestNameResults() throws {
        let name = "org.keywell.NameTest"
        let first = try fixture.bus.connect()
        let second = try fixture.bus.connect()
        #expect(try first.requestName(name, flags: [.allowReplacement, .doNotQueue]) == .primaryOwner)
        // (Asking again updates the flags, so keep allowReplacement.)
        #expect(try first.requestName(name, flags: [.allowReplacement, .doNotQueue]) == .alreadyOwner)
        #expect(try second.requestName(name, flags: [.doNotQueue]) == .exists)
        #expect(try second.requestName(name, flags: [.replaceExisting, .doNotQueue]) == .primaryOwner)
        #expect(try fixture.client.nameOwner(name) == second.uniqueName)
        #expect(try second.releaseName(name) == .released)
        #expect(try fixture.client.nameOwner(name) == nil)
        #expect(try second.releaseName(name) == .nonExistent)

        let third = try fixture.bus.connect()
        #expect(try first.requestName(name) == .primaryOwner)  // without allowReplacement now
        #expect(try third.requestName(name, flags: [.replaceExisting]) == .inQueue)
        #expect(try third.requestName(name, flags: [.replaceExisting, .doNotQueue]) == .exists)
    }

    @Test func callerCredentials() throws {
        let reply = try fixture.call("WhoCalls")
        #expect(reply == [.uint32(UInt32(getpid())), .uint32(getuid())])
        let exe = try String(contentsOfFile: "/proc/\(try reply.uint32(at: 0))/cmdline", encoding: .utf8)
        #expect(!exe.isEmpty)
    }

    @Test func closedConnectionsFailFast() throws {
        let connection = try fixture.bus.connect()
        connection.close()
        connection.close()
        #expect(!connection.isConnected)
        #expect(throws: DBusError.disconnected()) { try connection.ping(ServiceFixture.name) }
        connection.run()  // returns at once
    }

    @Test func lostBusEndsTheLoopAndFailsWaiters() throws {
        let bus = try PrivateSessionBus()
        let server = try bus.connect()
        let client = try bus.connect()
        try server.register(DBusClosureObject(interfaces: [ServiceFixture.interface]) { call in
            usleep(3_000_000)
            call.reply()
        }, at: "/slow")
        let failure = LockedValue<DBusError?>(nil)
        let done = DispatchSemaphore(value: 0)
        let serverName = server.uniqueName!
        Thread {
            do {
                _ = try client.call(destination: serverName, path: "/slow", interface: nil, member: "Sleep", timeout: .seconds(20))
            } catch let error as DBusError {
                failure.value = error
            } catch {}
            done.signal()
        }.start()
        usleep(100_000)
        kill(bus.daemonPID, SIGKILL)
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(failure.value != nil)
        client.run()  // the loop ended with the connection
        #expect(!client.isConnected)
        bus.stop()
    }
}
