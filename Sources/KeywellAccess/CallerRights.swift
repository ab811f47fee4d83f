import KeywellProtocol

/// Who may call what, for every face (docs/access-control.md, "Sandboxed callers"): a call that
/// reaches what every program of the user shares (`CallReach.shared`) is refused, before anything
/// is done, to a sandboxed caller and to one that cannot be identified (a process that left its
/// connection to a child, a sandbox that cannot be trusted); item calls are judged item by item.
extension AccessCaller {
    /// Why this caller may not make a call of `reach`; nil when it may.
    public func refusal(of reach: CallReach) -> String? {
        guard case .shared(let action) = reach else { return nil }
        return refusal(action)
    }

    /// Why this caller may not send one of `keys` in an item call (`WireKey.refusedFromSandboxes`);
    /// nil when it may.
    public func refusal(ofItemKeys keys: some Sequence<String>) -> String? {
        guard isSandboxed || identity == nil else { return nil }
        for key in keys {
            if let action = WireKey.refusedFromSandboxes[key] { return refusal(action) }
        }
        return nil
    }

    private func refusal(_ action: String) -> String? {
        if isSandboxed { return "a sandboxed application cannot \(action)" }
        if identity == nil { return "a program that cannot be identified cannot \(action)" }
        return nil
    }
}
