/// What an access question is about: one item of one keychain. Two values are the same item when
/// their keychain and reference are; the label is only what the question shows.
public struct AccessItem: Sendable, Hashable {
    /// The keychain file's path.
    public let keychain: String
    /// The item's stable reference (its `v_PersistentRef` bytes): what the engine is given to add
    /// a trusted identity to the item's list.
    public let reference: [UInt8]
    /// The item's label, as the question shows it.
    public let label: String

    public init(keychain: String, reference: [UInt8], label: String) {
        self.keychain = keychain
        self.reference = reference
        self.label = label
    }

    public static func == (left: AccessItem, right: AccessItem) -> Bool {
        left.reference == right.reference && left.keychain == right.keychain
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(keychain)
        hasher.combine(reference)
    }
}
