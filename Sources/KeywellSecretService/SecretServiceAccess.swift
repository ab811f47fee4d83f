import Foundation
import KeywellAccess
import KeywellCore
import KeywellDBus
import KeywellIdentity
import KeywellProtocol
import KeywellSystem

/// Access control on the Secret Service face (docs/secret-service.md, "Access control"): an
/// item whose list does not trust the caller is *locked for that caller* (in SearchItems'
/// `locked` list, `Locked` true, no secret, no change) until an Unlock prompt asks the person;
/// for a sandboxed caller it names not, it does not exist. The decisions and the question are
/// the daemon's one `AccessGate`, shared with the native API.
public struct SecretServiceAccess: Sendable {
    public let gate: AccessGate
    /// The daemon's callers, shared with its other interfaces (`CallContext`).
    public let callers: CallerDirectory
    public var identities: ApplicationIdentities { callers.identities }

    public init(gate: AccessGate, callers: CallerDirectory) {
        self.gate = gate
        self.callers = callers
    }

    /// Whether the caller's identity is known already: only then can a read stay on the D-Bus
    /// I/O thread (working it out waits for the bus).
    func isKnown(_ call: DBusMethodCall) -> Bool { callers.isKnown(call) }

    /// Works out a new caller's identity before its call runs (`CallerDirectory.learn`).
    func learn(_ call: DBusMethodCall) { callers.learn(call) }

    /// What creating an item over an existing one may do: replace it when its list trusts the
    /// creator; a sandboxed app makes its own item beside one it cannot see; anyone else is
    /// refused (the item is locked for it).
    static func replacement(of list: AccessList, by creator: AccessCaller) -> SecretServiceReplacement {
        if list.trusts(creator) { return .replace }
        return creator.isSandboxed ? .makeNew : .refuse
    }
}

/// One call's caller as access control sees it: the verdict for each item it names. Without
/// access control (`access` nil: a service built without it, as unit tests build it) every item
/// is allowed.
///
/// It holds the caller as `CallerDirectory` keeps it (one reference, no copy of the identity's
/// strings), and so does its `screen`: two references fit in an existential's inline buffer, so
/// handing the screen to the engine allocates nothing (docs/performance.md, "What a read pays
/// around its handler").
struct CallerAccess {
    let access: SecretServiceAccess?
    private let known: KnownCaller?

    /// `call`'s caller, worked out once for the call (`CallContext`).
    init(_ access: SecretServiceAccess?, call: CallContext) {
        self.access = access
        known = access == nil ? nil : call.known
    }

    var caller: AccessCaller? { known?.caller }

    /// Sandboxed callers see only the items whose lists name them.
    var isSandboxed: Bool { caller?.isSandboxed ?? false }

    /// AccessDenied when the caller may not make a call of `reach`: what every app of the user
    /// shares (collections, aliases, lock state, master passwords) is not a sandboxed app's, nor
    /// an unidentified program's, to change (docs/secret-service.md, "Sandboxed callers").
    func check(_ reach: CallReach) throws(DBusError) {
        guard let refusal = known?.caller.refusal(of: reach) else { return }
        throw .accessDenied(refusal.prefix(1).uppercased() + refusal.dropFirst())
    }

    /// The caller's verdicts as the engine's reads ask for them (`SecretCollection.read`); nil
    /// without access control (every item allowed).
    var screen: (any ItemAccessScreening)? {
        guard let access, let known else { return nil }
        return CallerScreen(gate: access.gate, known: known)
    }

    /// The verdict for each of `ids`, in order.
    func verdicts(_ ids: [UUID], in collection: any SecretCollection) throws(KeychainError) -> [AccessVerdict] {
        guard let access, let caller = known?.caller, !ids.isEmpty else { return Array(repeating: .allowed, count: ids.count) }
        let lists = try collection.access(ids)
        return lists.lists.indices.map { index in access.gate.verdict(for: caller, list: lists.lists[index]) { lists.item(index) } }
    }

    func verdict(_ id: UUID, in collection: any SecretCollection) throws(KeychainError) -> AccessVerdict {
        try verdicts([id], in: collection)[0]
    }

    /// `ids` without the items that do not exist for the caller.
    func visible(_ ids: [UUID], in collection: any SecretCollection) throws(KeychainError) -> [UUID] {
        guard access != nil, known != nil else { return ids }
        let verdicts = try verdicts(ids, in: collection)
        return zip(ids, verdicts).compactMap { $1 == .hidden ? nil : $0 }
    }
}

/// One caller's verdicts from the daemon's gate, for the engine's screened reads. The faces ask
/// their questions themselves (an Unlock prompt, KWallet's read), so `ask` is for completeness.
/// Two references: the engine takes it as `any ItemAccessScreening` with no box allocated.
struct CallerScreen: ItemAccessScreening {
    let gate: AccessGate
    /// The caller and the list texts found to trust it: verdicts by list alone are `.allowed`
    /// only when the list trusts the caller (`AccessGate.verdict`), which depends on nothing
    /// but the two, so they are safe to keep for the connection.
    let known: KnownCaller

    var caller: AccessCaller { known.caller }
    var trustingLists: TrustingLists? { known.trusting }
    var mayHide: Bool { known.caller.isSandboxed }

    func verdict(_ list: AccessList, item: () -> AccessItem) -> AccessVerdict {
        gate.verdict(for: known.caller, list: list, item: item)
    }

    func ask(about items: [AccessItem], interactionAllowed: Bool) throws(KeychainError) {
        guard gate.ask(known.caller, about: items, interactive: interactionAllowed) == .deny else { return }
        throw interactionAllowed ? KeychainError.accessDenied : KeychainError(SecStatus.interactionNotAllowed)
    }
}
