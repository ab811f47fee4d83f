/// An item's access list (docs/access-control.md, "Access lists on items"): any application, or
/// the application identities it trusts, in order (`flatpak:…`, `snap:…`, `exe:<path>[;sha256=<hex>]`).
/// Stored with the item and covered by its integrity MAC; keywelld asks before an untrusted
/// program uses the item (docs/access-control.md).
public enum AccessList: Sendable, Hashable {
    /// Every application may use the item (items older than access lists, migrated items, items
    /// made while the keychain's `enforceAccess` is off).
    case anyApplication
    /// Only these identities; empty = none.
    case applications([String])

    /// Entries in one list: far above what a person trusts by hand, and bounds the MAC's input.
    public static let maxApplications = 64
    /// Bytes (UTF-8) of one identity: a long path plus its hashes fits many times over.
    public static let maxIdentityBytes = 1024

    /// The list with its duplicates removed (first one kept), or `errSecParam` for an identity
    /// that is empty, over `maxIdentityBytes`, or holds a control character (identities are
    /// printed one a line), and for more than `maxApplications` entries. Linear in its input.
    public static func validated(_ identities: [String]) throws(KeychainError) -> AccessList {
        guard identities.count <= maxApplications else {
            throw .param("an access list holds at most \(maxApplications) applications")
        }
        var seen = Set<String>()
        var kept: [String] = []
        for identity in identities {
            let bytes = identity.utf8
            guard !bytes.isEmpty else { throw .param("an application identity is empty") }
            guard bytes.count <= maxIdentityBytes else {
                throw .param("an application identity is longer than \(maxIdentityBytes) bytes")
            }
            guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
                throw .param("an application identity holds a control character")
            }
            if seen.insert(identity).inserted { kept.append(identity) }
        }
        return .applications(kept)
    }

    /// The value of `WireKey.access`: `s` `WireKey.accessAnyApplication`, or `as` of identities.
    public var wireValue: WireValue {
        switch self {
        case .anyApplication: .string(WireKey.accessAnyApplication)
        case .applications(let identities): .strings(identities)
        }
    }

    /// Reads `WireKey.access`; anything else than its two forms is `errSecParam`.
    public init(wire value: WireValue) throws(KeychainError) {
        switch value {
        case .string(WireKey.accessAnyApplication): self = .anyApplication
        case .strings(let identities): self = try Self.validated(identities)
        default:
            throw .param("\(WireKey.access) must be \"\(WireKey.accessAnyApplication)\" or an array of application identities")
        }
    }

    /// The identity of a program that is not sandboxed (docs/access-control.md, "Identities"):
    /// `exe:` and its absolute path (symlinks resolved), then, unless only root can replace it
    /// (`sha256Hex` nil), `;sha256=` and the SHA-256 of its contents in 64 lowercase hex digits:
    /// another hash is another program.
    public static func executableIdentity(path: String, sha256Hex: String?) -> String {
        guard let sha256Hex else { return "exe:\(path)" }
        return "exe:\(path)\(executableHashField)\(sha256Hex)"
    }

    /// What stands between a program's path and its hash in its identity.
    public static let executableHashField = ";sha256="

    /// The identities trusted; nil for any application.
    public var applications: [String]? {
        if case .applications(let identities) = self { return identities }
        return nil
    }
}

extension AccessList {
    /// An identity without its hashes (`;sha256=<hex>`, `;script-sha256=<hex>`): two identities
    /// alike but for these are one program before and after a change (docs/access-control.md,
    /// "The words"). Paths cannot hold `;`, so the parts split cleanly.
    public static func unhashed(_ identity: String) -> Substring {
        guard identity.hasPrefix("exe:") else { return Substring(identity) }
        let kept = identity.split(separator: ";", omittingEmptySubsequences: false).filter {
            !$0.hasPrefix("sha256=") && !$0.hasPrefix("script-sha256=")
        }
        return Substring(kept.joined(separator: ";"))
    }
}
