import KeywellProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The item block of `find-*`, `delete-*` and `dump-keychain` (docs/cli.md "Item blocks"):
///
///     keychain: "<path>"
///     version: 512
///     class: "genp"
///     attributes:
///         0x00000007 <blob>="label"
///         …
enum ItemRendering {
    /// `version_partition`: what macOS 10.11.4 and later print for every keychain.
    static let blobVersion = 512

    /// The lines up to `attributes:`, which `dump-keychain` prints even when the item's
    /// attributes and data then cannot be read (`security` fetches them together, after this).
    static func header(_ item: FoundItem, keychainPath: String) -> String {
        "keychain: \(PrintBuffer.render(Array(keychainPath.utf8)))\n"
            + "version: \(blobVersion)\n"
            + "class: \(PrintBuffer.render(Array(item.itemClass.rawValue.utf8)))\n"
            + "attributes:\n"
    }

    /// One line per schema attribute, after the header.
    static func attributeLines(_ item: FoundItem) -> String {
        var text = ""
        for attribute in item.itemClass.schema {
            text += "    \(tag(attribute))<\(attribute.format.rawValue)>=\(value(attribute, of: item))\n"
        }
        return text
    }

    static func block(_ item: FoundItem, keychainPath: String) -> String {
        header(item, keychainPath: keychainPath) + attributeLines(item)
    }

    /// `dump-keychain -d`: the secret after the attributes.
    /// The item's access list in macOS's `dump-keychain -a` layout: one entry that allows
    /// decrypting without a password to the applications listed (`<null>`: any application).
    static func accessLines(_ item: FoundItem) -> String {
        var text = "access: 1 entries\n"
            + "    entry 0:\n"
            + "        authorizations (1): decrypt\n"
            + "        don't-require-password\n"
            + "        description: \(item.text(AttributeKey.label) ?? "")\n"
        switch item.access {
        case .applications(let identities)?:
            text += "        applications (\(identities.count)):\n"
            for (index, identity) in identities.enumerated() { text += "            \(index): \(identity)\n" }
        case .anyApplication?, nil:
            text += "        applications: <null>\n"
        }
        return text
    }

    static func dataLines(_ secret: [UInt8]) -> String {
        "data:\n\(PrintBuffer.render(secret))\n"
    }

    /// Label and alias are the numeric tags 7 and 8 (`0x00000007 `); the rest print as quoted codes.
    private static func tag(_ attribute: ItemClass.Attribute) -> String {
        switch attribute.tag {
        case AttributeKey.label: PrintBuffer.render(uint32: 7)
        case "alis": PrintBuffer.render(uint32: 8)
        default: PrintBuffer.render(Array(attribute.tag.utf8))
        }
    }

    private static func value(_ attribute: ItemClass.Attribute, of item: FoundItem) -> String {
        guard let key = attribute.wireKey else { return "<NULL>" }
        guard let wire = item.attributes[key] else {
            // Port and protocol are primary-key parts of internet items: missing means 0.
            if item.itemClass == .internetPassword, key == AttributeKey.port || key == AttributeKey.`protocol` {
                return PrintBuffer.render(uint32: 0)
            }
            return "<NULL>"
        }
        switch attribute.format {
        case .timedate:
            guard case .integer(let milliseconds) = wire else { return "<NULL>" }
            return PrintBuffer.render(timedate(milliseconds: milliseconds))
        case .uint32, .sint32:
            return PrintBuffer.render(uint32Bytes(wire))
        case .blob:
            return PrintBuffer.render(item.bytes(key) ?? [])
        }
    }

    /// A number's big-endian bytes; a four-character code is already those bytes.
    private static func uint32Bytes(_ wire: WireValue) -> [UInt8] {
        switch wire {
        case .integer(let number): FourCharCode.bytes(UInt32(truncatingIfNeeded: number))
        case .bool(let flag): FourCharCode.bytes(flag ? 1 : 0)
        case .string(let code): Array(code.utf8)
        case .data(let bytes): Array(bytes)
        case .strings: []
        }
    }

    /// `YYYYMMDDhhmmssZ` and a NUL, in UTC: the legacy keychain's timedate.
    static func timedate(milliseconds: Int64) -> [UInt8] {
        var seconds = time_t(milliseconds / 1000 - (milliseconds % 1000 < 0 ? 1 : 0))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let text = digits(parts.tm_year + 1900, 4) + digits(parts.tm_mon + 1, 2) + digits(parts.tm_mday, 2)
            + digits(parts.tm_hour, 2) + digits(parts.tm_min, 2) + digits(parts.tm_sec, 2) + "Z"
        return Array(text.utf8) + [0]
    }
}
