import KeywellAccess
import KeywellCore
import KeywellProtocol

/// Access control for one native call (docs/access-control.md, docs/native-api.md "Access
/// control"): the engine's verdicts and questions go to the daemon's one `AccessGate` for the
/// call's caller. `ask` waits for the person: the engine asks once, after screening, before
/// anything is read out or changed, and a search read on the D-Bus I/O thread leaves that step
/// to a worker (`KeychainStore.Items.screenedSearch`); every other call that screens runs on one.
struct NativeAccessScreen: ItemAccessScreening {
    let gate: AccessGate
    let caller: AccessCaller

    var mayHide: Bool { caller.isSandboxed }

    func verdict(_ list: AccessList, item: () -> AccessItem) -> AccessVerdict {
        gate.verdict(for: caller, list: list, item: item)
    }

    func ask(about items: [AccessItem], interactionAllowed: Bool) throws(KeychainError) {
        guard gate.ask(caller, about: items, interactive: interactionAllowed) == .deny else { return }
        guard interactionAllowed else {
            throw KeychainError(SecStatus.interactionNotAllowed,
                                detail: "this application is not trusted by the item's access list and the call forbids asking (u_AuthUI)")
        }
        throw KeychainError.accessDenied
    }
}
