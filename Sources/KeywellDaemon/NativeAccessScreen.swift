import KeywellAccess
import KeywellCore
import KeywellProtocol

/// Access control for one native call (docs/access-control.md, docs/native-api.md "Access
/// control"): the engine's verdicts and questions go to the daemon's one `AccessGate` for the
/// call's caller. A call running on the D-Bus I/O thread cannot wait for a person: when it
/// would have to ask, it throws `mustContinueOffIOThread`, which the engine passes up unchanged
/// (it asks once, after screening, before anything is read out or changed); the handler then runs
/// the call again on a worker, where asking may wait, as `DBusMethodCall.mustContinueOffIOThread`
/// does for the generated interfaces whose functions throw D-Bus errors.
struct NativeAccessScreen: ItemAccessScreening {
    let gate: AccessGate
    let caller: AccessCaller
    let onIOThread: Bool

    /// The engine's errors are `KeychainError`s, so the layer's marker travels through it as this
    /// one; never sent to a caller.
    static let mustContinueOffIOThread = KeychainError(SecStatus.interactionNotAllowed, detail: "asking continues on a worker")

    var mayHide: Bool { caller.isSandboxed }

    func verdict(_ list: AccessList, item: () -> AccessItem) -> AccessVerdict {
        gate.verdict(for: caller, list: list, item: item)
    }

    func ask(about items: [AccessItem], interactionAllowed: Bool) throws(KeychainError) {
        if onIOThread { throw Self.mustContinueOffIOThread }
        guard gate.ask(caller, about: items, interactive: interactionAllowed) == .deny else { return }
        guard interactionAllowed else {
            throw KeychainError(SecStatus.interactionNotAllowed,
                                detail: "this application is not trusted by the item's access list and the call forbids asking (u_AuthUI)")
        }
        throw KeychainError.accessDenied
    }
}
