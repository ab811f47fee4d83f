import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import Logging

/// Everything under `/org/freedesktop/secrets`, registered as one subtree: parses the path and
/// hands the call to the object it names. Any well-formed path gets its interfaces (whether the
/// object exists is learnt when the call runs, sparing a look-up on every call); calls on objects
/// that do not exist (any more) answer UnknownMethod, as on every other path (MissingObject).
final class SecretServiceTree: DBusObject {
    private let context: ServiceContext
    private let activity: @Sendable () -> Void
    /// Whether calls are logged (debug level), asked of the logger once: its level is set when
    /// the daemon starts, and reading it through the handler on every call cost more than the
    /// line it guards (docs/performance.md, "What a read pays around its handler").
    private let logsCalls: Bool

    init(context: ServiceContext, activity: @escaping @Sendable () -> Void = {}) {
        self.context = context
        self.activity = activity
        logsCalls = context.logger.logLevel <= .debug
    }

    func interfaces(at path: String) -> [DBusInterface]? {
        switch ObjectPaths.parse(path) {
        case .service?: Self.serviceInterfaces
        case .collection?: Self.collectionInterfaces
        case .item?: Self.itemInterfaces
        case .session?: Self.sessionInterfaces
        case .prompt?: Self.promptInterfaces
        case .folder?, nil: nil
        }
    }

    /// Made once: an array literal here built a new array on every call.
    private static let serviceInterfaces = [SecretServiceInterfaces.service, GnomeKeyringInterfaces.internalInterface]
    private static let collectionInterfaces = [SecretServiceInterfaces.collection]
    private static let itemInterfaces = [SecretServiceInterfaces.item]
    private static let sessionInterfaces = [SecretServiceInterfaces.session]
    private static let promptInterfaces = [SecretServiceInterfaces.prompt]

    func childNodes(at path: String) -> [String] {
        childNodes(at: path) { nil }
    }

    /// A collection's item nodes as its `Items` lists them for the caller: a sandboxed app does
    /// not learn the paths of items that do not exist for it (docs/secret-service.md, "Sandboxed callers").
    func childNodes(at path: String, call: DBusMethodCall) -> [String] {
        childNodes(at: path) { context.callerAccess(context.callContext(call)) }
    }

    /// `access` is asked for only at a collection's path: elsewhere the nodes are everyone's.
    private func childNodes(at path: String, access: () -> CallerAccess?) -> [String] {
        switch ObjectPaths.parse(path) {
        case .service?: return ObjectPaths.folders
        case .folder("collection")?: return context.directory.allIDs().map(ObjectPaths.segment(for:))
        case .folder("aliases")?: return CollectionDirectory.aliases.filter { context.directory.target(ofAlias: $0) != nil }
        case .collection(let address)?:
            guard let collection = try? context.collection(address), var ids = try? collection.itemIDs() else { return [] }
            if let access = access(), access.isSandboxed {
                // Nothing listed when the lists cannot be read: hiding is the safe failure.
                ids = (try? access.visible(ids, in: collection)) ?? []
            }
            return ids.map(ObjectPaths.segment(for:))
        default: return []
        }
    }

    /// Reads answer on the D-Bus I/O thread, the hot path of every client; writes, prompts, DH
    /// key agreement (about a millisecond of big-number work) and the collections' `Items` lists
    /// (which grow with the collection) go to a worker. So do the first reads of a caller whose
    /// identity access control has not worked out yet (that waits for the bus).
    func placement(of call: DBusMethodCall) -> DBusCallPlacement {
        if let access = context.access, !access.isKnown(call) { return .worker }
        if call.interface == StandardInterface.properties {
            guard call.member != "Set" else { return .worker }
            if case .collection? = ObjectPaths.parse(call.path) { return Self.collectionPropertyPlacement(call) }
            return .ioThread
        }
        switch call.member {
        case SecretServiceProtocol.Member.searchItems, SecretServiceProtocol.Member.getSecrets, SecretServiceProtocol.Member.getSecret, SecretServiceProtocol.Member.readAlias:
            return .ioThread
        case SecretServiceProtocol.Member.openSession:
            return call.arguments.first?.stringValue == SecretServiceNames.plainAlgorithm ? .ioThread : .worker
        default:
            return .worker
        }
    }

    /// A collection's `Label`, `Locked`, `Created` and `Modified` are one look at its keychain;
    /// `Items` (so `GetAll` too) lists every item and grows with the collection: a worker's.
    private static func collectionPropertyPlacement(_ call: DBusMethodCall) -> DBusCallPlacement {
        guard call.member == "Get", call.arguments.count == 2,
              let name = call.arguments[1].stringValue, name != SecretServiceProtocol.Property.items else { return .worker }
        return .ioThread
    }

    func handle(_ call: DBusMethodCall) {
        FileChecks.oncePerCall { handleChecked(call) }
    }

    private func handleChecked(_ call: DBusMethodCall) {
        activity()
        context.access?.learn(call)
        let callContext = context.callContext(call)
        let object = ObjectPaths.parse(call.path)
        do throws(DBusError) {
            // Who may call what, before anything is done (docs/secret-service.md, "Sandboxed callers").
            try checkReach(SecretServiceProtocol.reach(interface: interface(of: call, object), member: call.member), callContext)
            switch object {
            case .service? where GnomeKeyringInternal.handles(call):
                call.reply(try GnomeKeyringInternal(context: context).dispatchGnomeKeyringInternal(call, context: callContext))
            case .service?:
                call.reply(try ServiceObject(context: context).dispatchService(call, context: callContext))
            case .collection(let address)?:
                call.reply(try CollectionObject(context: context, address: address).dispatchCollection(call, context: callContext))
            case .item(let address, let id)?:
                // GetSecret may have to ask: the question and the finish then run off the I/O thread.
                switch try ItemObject(context: context, address: address, id: id).dispatchItem(call, context: callContext) {
                case .answered(let values): call.reply(values)
                case .afterQuestion(let question):
                    call.finishOffIOThread { [self] in
                        do throws(DBusError) {
                            call.reply(try question.askAndFinish())
                            log(callContext, "ok")
                        } catch {
                            fail(callContext, error, object)
                        }
                    }
                    return
                }
            case .session(let number)?:
                call.reply(try SessionObject(context: context, number: number).dispatchSession(call, context: callContext))
            case .prompt(let number)?:
                call.reply(try PromptObject(context: context, number: number).dispatchPrompt(call, context: callContext))
            case .folder?, nil:
                throw SecretServiceError.noSuchObject("No object at \(call.path)")
            }
            log(callContext, "ok")
        } catch {
            fail(callContext, error, object)
        }
    }

    private func fail(_ call: CallContext, _ error: DBusError, _ object: SecretObject?) {
        let answer = MissingObject.answer(error, calling: call.path, object)
        call.call.reply(error: answer)
        log(call, answer.name)
    }

    func property(_ name: String, interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> DBusValue {
        activity()
        let object = ObjectPaths.parse(path)
        do throws(DBusError) {
            switch object {
            case .service?: return try ServiceObject(context: context).property(name)
            case .collection(let address)?:
                return try CollectionObject(context: context, address: address).property(name, call: context.callContext(call))
            case .item(let address, let id)?:
                return try ItemObject(context: context, address: address, id: id).property(name, call: context.callContext(call))
            default: throw .unknownProperty("No property \(interface).\(name) at \(path)")
            }
        } catch {
            throw MissingObject.answer(error, calling: path, object)
        }
    }

    func allProperties(interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> [String: DBusValue]? {
        let object = ObjectPaths.parse(path)
        guard interface == SecretServiceNames.itemInterface, case .item(let address, let id)? = object else { return nil }
        activity()
        do throws(DBusError) {
            return try ItemObject(context: context, address: address, id: id).allProperties(call: context.callContext(call))
        } catch {
            throw MissingObject.answer(error, calling: path, object)
        }
    }

    func setProperty(_ name: String, interface: String, value: DBusValue, at path: String, call: DBusMethodCall) throws(DBusError) {
        activity()
        let object = ObjectPaths.parse(path)
        let call = context.callContext(call)
        do throws(DBusError) {
            if case .collection? = object {
                try checkReach(SecretServiceProtocol.reach(settingProperty: name, interface: SecretServiceNames.collectionInterface), call)
            }
            switch object {
            case .collection(let address)?: try CollectionObject(context: context, address: address).setProperty(name, value, call: call)
            case .item(let address, let id)?: try ItemObject(context: context, address: address, id: id).setProperty(name, value, call: call)
            default: throw .propertyReadOnly("Property \(interface).\(name) is read-only")
            }
        } catch {
            throw MissingObject.answer(error, calling: path, object)
        }
    }

    /// Refuses a call the caller may not make; only a call that reaches shared state asks who the
    /// caller is, since working it out may wait for the bus.
    private func checkReach(_ reach: CallReach, _ call: CallContext) throws(DBusError) {
        guard case .shared = reach else { return }
        try context.callerAccess(call).check(reach)
    }

    /// The interface a call is for: the one it names, else the one its object has that member
    /// on (a call may leave the interface out).
    private func interface(of call: DBusMethodCall, _ object: SecretObject?) -> String? {
        if let interface = call.interface { return interface }
        switch object {
        case .service? where GnomeKeyringInternal.handles(call): return SecretServiceNames.gnomeKeyringInternalInterface
        case .service?: return SecretServiceNames.serviceInterface
        case .collection?: return SecretServiceNames.collectionInterface
        case .item?: return SecretServiceNames.itemInterface
        case .session?: return SecretServiceNames.sessionInterface
        case .prompt?: return SecretServiceNames.promptInterface
        case .folder?, nil: return nil
        }
    }

    /// Debug level only: calls are frequent, and arguments (secrets) are never logged.
    private func log(_ call: CallContext, _ outcome: String) {
        guard logsCalls else { return }
        call.logger.debug("secrets \(call.member) \(call.path): \(outcome)", metadata: [
            "caller": "\(call.sender)", "us": "\(call.elapsedMicroseconds)",
            // Where it ran: a known caller's reads stay on the I/O thread (Tests/Integration checks it).
            "thread": "\(call.connection.isOnIOThread ? "io" : "worker")",
        ])
    }
}
