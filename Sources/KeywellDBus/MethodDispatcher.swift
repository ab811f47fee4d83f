import CDBus

/// Routes one incoming method call: standard interfaces first, then the registered object.
/// `org.freedesktop.DBus.Peer` never gets here: libdbus answers it itself.
enum MethodDispatcher {
    /// On the loop's leader. A small call is decoded and resolved here, and runs here when its
    /// object places it here (`DBusCallPlacement.ioThread`); anything else continues off the loop.
    static func receive(_ message: OpaquePointer, on connection: DBusConnection, registry: ObjectRegistry, loop: ConnectionLoop) {
        // The call takes over the reference to `message`. Registered here, in the order the bus delivered it: the caller's departure, read later,
        // then finds it even when it is decoded off the loop.
        let call = DBusMethodCall(connection: connection, message: message, arrived: ContinuousClock.now)
        connection.inFlight.register(call)
        guard MessageSize.isSmall(message) else {
            loop.runOffLoop { dispatch(call, on: connection, registry: registry, loop: nil) }
            return
        }
        dispatch(call, on: connection, registry: registry, loop: loop)
    }

    /// Where a call goes, found before its arguments are decoded (a method's mark decides how).
    private enum Route {
        case introspect
        case properties
        case method(any DBusObject)
        case refused(DBusError)
    }

    /// `loop` is nil when already off the loop (everything then runs here).
    static func dispatch(_ call: DBusMethodCall, on connection: DBusConnection, registry: ObjectRegistry, loop: ConnectionLoop?) {
        // The path and interface are read where libdbus keeps them and matched against the
        // registry's and the interfaces' own strings: no string is made for them on every call.
        let message = call.message
        // libdbus refuses a method call without a path; "/" as the call's default all the same.
        let (path, object) = dbus_message_get_path(message).map { registry.object(at: MessageText($0)) }
            ?? "/".withCString { registry.object(at: MessageText($0)) }
        call.path = path
        let interfaces = object?.interfaces(at: call.path)
        var declaring: DBusInterface?
        if let name = dbus_message_get_interface(message).map(MessageText.init) {
            if name.isExactly(StandardInterface.introspectable) {
                call.interface = StandardInterface.introspectable
            } else if name.isExactly(StandardInterface.properties) {
                call.interface = StandardInterface.properties
            } else if let interfaces, let index = interfaces.firstIndex(where: { name.isExactly($0.name) }) {
                declaring = interfaces[index]
                call.interface = interfaces[index].name
            } else {
                call.interface = name.string
            }
        }

        let route: Route
        switch call.interface {
        case StandardInterface.introspectable?:
            route = .introspect
        case StandardInterface.properties?:
            route = .properties
        default:
            if let object, let interfaces {
                route = methodRoute(call, object: object, interfaces: interfaces, declaring: declaring)
            } else {
                route = .refused(missingObject(call))
            }
        }

        // The arguments are decoded once the method is known, and before anything is answered
        // (a malformed body is refused first, whatever else is wrong): a method marked
        // `secretStrings` has its secret strings read straight into locked memory, never into a
        // `String` (docs/dbus-layer.md, "Secrets in messages").
        do {
            call.arguments = try MessageDecoder.decodeArguments(of: message, maximumValues: call.decodingBudget,
                                                                secretStrings: call.method?.secretStrings.inputs ?? [])
        } catch {
            call.reply(error: error)
            return
        }

        /// The loop to hand the call to, or nil to run it here. A reply still being written
        /// (bigger than the socket takes at once) would otherwise wait for this handler: the loop
        /// writes its rest only when it polls again. So the call runs on this thread while another
        /// takes the loop on (docs/dbus-layer.md). Each site's work is a local function, called
        /// directly here; only a hand-off makes a closure of it (made for every call, it was an
        /// allocation on each).
        func handOff(_ placement: DBusCallPlacement) -> ConnectionLoop? {
            guard let loop, placement == .worker || loop.isStillSending else { return nil }
            return loop
        }

        switch route {
        case .refused(let error):
            call.reply(error: error)
        case .introspect:
            // Listing a subtree's children may be slow (every item of a collection): never on the loop.
            @Sendable func introspectCall() { introspect(call, object: object, interfaces: interfaces, registry: registry) }
            if let loop = handOff(.worker) { loop.runOffLoop(introspectCall) } else { introspectCall() }
        case .properties:
            guard let object, let interfaces else { call.reply(error: missingObject(call)); return }
            if let refusal = SignatureCheck.refusal(ofStandardCall: call, interface: StandardInterface.properties) {
                call.reply(error: refusal)
                return
            }
            @Sendable func handleProperties() {
                DBusMethodCall.withCurrent(call) { PropertiesDispatcher.handle(call, object: object, interfaces: interfaces) }
            }
            if let loop = handOff(object.placement(of: call)) { loop.runOffLoop(handleProperties) } else { handleProperties() }
        case .method(let object):
            if let method = call.method, let refusal = SignatureCheck.refusal(of: call, to: method, by: object) {
                call.reply(error: refusal)
                return
            }
            @Sendable func handleCall() { DBusMethodCall.withCurrent(call) { object.handle(call) } }
            if let loop = handOff(object.placement(of: call)) { loop.runOffLoop(handleCall) } else { handleCall() }
        }
    }

    /// A call to an object's own interfaces: its method (set on the call), Introspect without an
    /// interface, or the refusal.
    private static func methodRoute(_ call: DBusMethodCall, object: any DBusObject, interfaces: [DBusInterface],
                                    declaring: DBusInterface?) -> Route {
        if let interfaceName = call.interface {
            guard let interface = declaring else {
                return .refused(.unknownInterface("No interface \(interfaceName) at \(call.path)"))
            }
            guard let method = interface.method(named: call.member, signature: call.signature) else {
                return .refused(unknownMethod(call))
            }
            call.method = method
            return .method(object)
        }
        // No interface given: the first interface declaring the member wins (D-Bus rule).
        if call.member == "Introspect" { return .introspect }
        guard let method = interfaces.lazy.compactMap({ $0.method(named: call.member, signature: call.signature) }).first else {
            return .refused(unknownMethod(call))
        }
        call.method = method
        return .method(object)
    }

    private static func introspect(_ call: DBusMethodCall, object: (any DBusObject)?, interfaces: [DBusInterface]?,
                                   registry: ObjectRegistry) {
        guard call.member == "Introspect" else { call.reply(error: unknownMethod(call)); return }
        if let refusal = SignatureCheck.refusal(ofStandardCall: call, interface: StandardInterface.introspectable) {
            call.reply(error: refusal)
            return
        }
        var children = Set(registry.registeredChildren(of: call.path))
        // A subtree may have bare intermediate nodes (no interfaces) that still list children.
        if let object { children.formUnion(object.childNodes(at: call.path, call: call)) }
        // Any path answers, with what is below it (libdbus and GDBus do the same): a client
        // walking the tree finds empty nodes, not errors.
        let xml = Introspection.document(interfaces: interfaces ?? [], children: children.sorted(),
                                         includeStandard: interfaces != nil)
        call.reply([.string(xml)])
    }

    /// A call to a path where nothing is: UnknownMethod, the answer of libdbus, GDBus and so
    /// gnome-keyring, which is what clients take for "not found" (docs/secret-service.md).
    static func missingObject(_ call: DBusMethodCall) -> DBusError {
        .unknownMethod("No object at path \(call.path) (method \(call.interface.map { $0 + "." } ?? "")\(call.member))")
    }

    static func unknownMethod(_ call: DBusMethodCall) -> DBusError {
        .unknownMethod("No method \(call.interface.map { $0 + "." } ?? "")\(call.member) with signature (\(call.signature.rawValue)) at \(call.path)")
    }
}
