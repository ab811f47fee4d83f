import KeywellProtocol

extension AccessList {
    /// Whether the list trusts `caller`: it is open to any application, or names the caller's
    /// identity, or (for an interpreter running a script) names the interpreter alone, which
    /// trusts it whatever script it runs. Linear in the list, at most `maxApplications` entries.
    public func trusts(_ caller: AccessCaller) -> Bool {
        switch self {
        case .anyApplication:
            return !caller.isSandboxed
        case .applications(let identities):
            guard let own = caller.identityString else { return false }
            if identities.contains(own) { return true }
            if let program = caller.programString { return identities.contains(program) }
            return false
        }
    }
}
