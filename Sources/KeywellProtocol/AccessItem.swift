/// What an access question is about: one item of one keychain. Two values are the same item when
/// their keychain and reference are; the label and the list are only what the question shows.
public struct AccessItem: Sendable, Hashable {
    /// The keychain file's path: what `keywell list-keychains` prints, and the question names.
    public let keychain: String
    /// The item's stable reference (its `v_PersistentRef` bytes): what the engine is given to add
    /// a trusted identity to the item's list.
    public let reference: [UInt8]
    /// The item's label, as the question shows it.
    public let label: String
    /// The identities the item's list trusts (empty when unknown or none): the question says when
    /// one of them is the caller's program before it changed (docs/access-control.md, "The words").
    public let trusted: [String]

    public init(keychain: String, reference: [UInt8], label: String, trusted: [String] = []) {
        self.keychain = keychain
        self.reference = reference
        self.label = label
        self.trusted = trusted
    }

    /// The same item with its label, read once the question is about to be asked.
    public func labelled(_ label: String) -> AccessItem {
        AccessItem(keychain: keychain, reference: reference, label: label, trusted: trusted)
    }

    /// The same item with the identities its list trusts.
    public func trusting(_ list: AccessList) -> AccessItem {
        AccessItem(keychain: keychain, reference: reference, label: label, trusted: list.applications ?? [])
    }

    /// The keychain's path byte for byte: "café" spelt in other bytes is another file.
    public static func == (left: AccessItem, right: AccessItem) -> Bool {
        left.reference == right.reference && left.keychain.utf8.elementsEqual(right.keychain.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(reference)
        var keychain = keychain
        keychain.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
