import Foundation

/// Items whose identity is their free-form attributes (the `item_attribute` rows) rather than a
/// primary key: the items the Secret Service makes (docs/file-format.md, "`item_attribute`:
/// free-form rows"). The file marks them by their access group, and keeps two hidden rows beside
/// their attributes. The engine needs these facts itself (the native API's `r_SSAttributes`,
/// export and import), so they live here; how a face derives the rest is the face's business.
public enum FreeformItem {
    /// The start of a free-form item's access group; the rest is the item's UUID in hex, which
    /// keeps the `genp` primary key (acct, svce, agrp) of two such items apart whatever their
    /// attributes.
    public static let accessGroupPrefix = "org.freedesktop.secrets/"

    /// Free-form rows no D-Bus client can name (D-Bus strings never hold NUL): the secret's
    /// content type and the item's type, kept only when they differ from the defaults.
    public static let contentTypeRow = "\u{0}content-type"
    public static let typeRow = "\u{0}type"
    public static let hiddenRows = [contentTypeRow, typeRow]
    /// The content type a secret without a `contentTypeRow` has.
    public static let defaultContentType = "text/plain"

    /// The access group that marks `item` as a free-form item.
    public static func accessGroup(for item: UUID) -> String {
        accessGroupPrefix + item.compactHex
    }

    /// Whether an item with this access group is a free-form item.
    public static func isFreeform(accessGroup: String?) -> Bool {
        accessGroup?.hasPrefix(accessGroupPrefix) ?? false
    }
}
