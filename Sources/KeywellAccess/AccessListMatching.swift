import KeywellProtocol
import KeywellSystem

extension AccessList {
    /// Whether the list trusts `caller`: it is open to any application, or one of its entries
    /// names the caller (`AccessCaller.isNamed(by:)`). Linear in the list, at most
    /// `maxApplications` entries.
    public func trusts(_ caller: AccessCaller) -> Bool {
        switch self {
        case .anyApplication:
            return !caller.isSandboxed
        case .applications(let identities):
            guard caller.identityString != nil else { return false }
            return identities.contains { caller.isNamed(by: $0) }
        }
    }
}

extension AccessCaller {
    /// Whether a list entry names this caller (docs/access-control.md, "Who is asked"): it is the
    /// caller's identity, or (for an interpreter running a script) the interpreter's alone, which
    /// trusts it whatever script it runs. For a program only root can replace, also an entry
    /// written while it was named with a hash: the same name with `;sha256=<any hex>` after the
    /// path. Any other caller is matched exactly, hash included. Every comparison is byte for
    /// byte: a path spelt in other bytes ("café" composed or not) is another program.
    func isNamed(by entry: String) -> Bool {
        if let identityString, entry.isExactly(identityString) { return true }
        if let programString, entry.isExactly(programString) { return true }
        guard let prefix = hashedEntryPrefix, entry.startsExactly(with: prefix) else { return false }
        let afterPrefix = entry.utf8.dropFirst(prefix.utf8.count)
        let digits = afterPrefix.prefix { $0.isHexDigit }
        guard !digits.isEmpty else { return false }
        let rest = afterPrefix.dropFirst(digits.count)
        return rest.isEmpty || rest.elementsEqual(scriptPart.utf8)
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
