import KeywellAccess
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// Access control for one native call (docs/access-control.md, docs/native-api.md "Access
/// control"): the engine's verdicts and questions go to the daemon's one `AccessGate` for the
/// call's caller. A call running on the D-Bus I/O thread cannot wait for a person: when it
/// would have to ask, it records that (`movedOff`) and fails; the handler then runs the call
/// again on a worker, where asking may wait.
struct NativeAccessScreen: ItemAccessScreening {
    let gate: AccessGate
    let caller: AccessCaller
    let onIOThread: Bool
    let movedOff: MoveOffIOThread

    var mayHide: Bool { caller.isSandboxed }

    func verdict(_ list: AccessList, item: () -> AccessItem) -> AccessVerdict {
        gate.verdict(for: caller, list: list, item: item)
    }

    func ask(about items: [AccessItem], interactionAllowed: Bool) throws(KeychainError) {
        if onIOThread {
            movedOff.set()
            throw KeychainError(SecStatus.interactionNotAllowed, detail: "asking continues on a worker")
        }
        guard gate.ask(caller, about: items, interactive: interactionAllowed) == .deny else { return }
        guard interactionAllowed else {
            throw KeychainError(SecStatus.interactionNotAllowed,
                                detail: "this application is not trusted by the item's access list and the call forbids asking (u_AuthUI)")
        }
        throw KeychainError.accessDenied
    }
}

/// Set when a call on the I/O thread must continue on a worker.
final class MoveOffIOThread: Sendable {
    private let moved = Protected(false)

    func set() { moved.withLock { $0 = true } }
    var isSet: Bool { moved.withLock { $0 } }
}
