import Foundation
import KeywellCore
import KeywellSystem

/// gnome-keyring's plaintext keyring (docs/migration.md, "gnome-keyring's plaintext file"): a
/// GLib key file, written instead of the binary format when a keyring's password is empty.
///
///     [keyring]            display-name, ctime, mtime, lock settings
///     [<id>]               item-type, display-name, secret (or binary-secret in hex), mtime, ctime
///     [<id>:attribute<n>]  name, type (string or uint32), value
///     [<id>:acl<n>]        access entries (ignored: imported items are for any application)
public enum GnomeKeyringText {
    /// A key file whose first group is `[keyring]`.
    public static func matches(_ bytes: [UInt8]) -> Bool {
        guard let text = String(validating: bytes.prefix(4096), as: UTF8.self) ?? String(validating: bytes, as: UTF8.self) else {
            return bytes.starts(with: Array("[keyring]".utf8))
        }
        return text.split(separator: "\n").first { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return !trimmed.isEmpty && !trimmed.hasPrefix("#")
        }.map { $0.trimmingCharacters(in: .whitespaces) == "[keyring]" } ?? false
    }

    public static func read(_ bytes: [UInt8], keyring: String) throws(KeyringReadError) -> KeyringContents {
        guard bytes.count <= KeyringLimits.maximumFileSize else {
            throw .tooLarge(keyring: keyring, reason: "the file is over \(KeyringLimits.maximumFileSize) bytes")
        }
        let file = try KeyFile.parse(bytes, keyring: keyring)
        guard file.groups.first?.name == "keyring" else { throw .unrecognized(keyring: keyring) }
        let header = file.groups[0].values
        var items: [KeyringItem] = []
        var attributeGroups: [String: [[String: String]]] = [:]
        for group in file.groups.dropFirst() {
            guard let colon = group.name.firstIndex(of: ":") else { continue }
            let id = String(group.name[..<colon])
            if group.name[group.name.index(after: colon)...].hasPrefix("attribute") {
                attributeGroups[id, default: []].append(group.values)
            }
        }
        for group in file.groups.dropFirst() where !group.name.contains(":") && group.name != "keyring" {
            guard items.count < KeyringLimits.maximumItems else {
                throw .tooLarge(keyring: keyring, reason: "more than \(KeyringLimits.maximumItems) items")
            }
            let values = group.values
            var attributes: [String: String] = [:]
            for attribute in attributeGroups[group.name] ?? [] {
                guard let name = attribute["name"].map(KeyFile.unescape) else { continue }
                attributes[name] = attribute["value"].map(KeyFile.unescape) ?? ""
            }
            guard attributes.count <= KeyringLimits.maximumAttributesPerItem else {
                throw .tooLarge(keyring: keyring, reason: "more than \(KeyringLimits.maximumAttributesPerItem) attributes on one item")
            }
            let secret: SecretBytes
            if let text = values["secret"] {
                secret = SecretBytes(copying: Array(KeyFile.unescape(text).utf8))
            } else if let hex = values["binary-secret"] {
                guard let bytes = Self.hexDecode(hex) else { throw .corrupt(keyring: keyring, reason: "item \(group.name) has a bad binary-secret") }
                secret = SecretBytes(copying: bytes)
            } else {
                secret = SecretBytes(count: 0)
            }
            let type = values["item-type"].flatMap { UInt32($0.trimmingCharacters(in: .whitespaces)) } ?? 0
            items.append(KeyringItem(
                identity: "id:\(group.name)", label: values["display-name"].map(KeyFile.unescape) ?? "",
                attributes: attributes, schema: GnomeKeyringBinary.implicitSchema(attributes, itemType: type),
                secret: secret, created: number(values["ctime"]), modified: number(values["mtime"])))
        }
        return KeyringContents(format: .gnomeKeyringPlaintext, label: header["display-name"].map(KeyFile.unescape) ?? "",
                               created: number(header["ctime"]), modified: number(header["mtime"]), items: items)
    }

    private static func number(_ text: String?) -> Int64 {
        text.flatMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }.map { Int64(clamping: $0) } ?? 0
    }

    private static func hexDecode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}

/// The parts of GLib's key-file syntax gnome-keyring's writer uses: `[group]`, `key=value`,
/// `#` comments, blank lines; localised keys (`key[xx]`) are skipped.
struct KeyFile {
    struct Group {
        let name: String
        var values: [String: String]
    }

    var groups: [Group] = []

    static func parse(_ bytes: [UInt8], keyring: String) throws(KeyringReadError) -> KeyFile {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .corrupt(keyring: keyring, reason: "the key file is not UTF-8")
        }
        var file = KeyFile()
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("[") {
                guard let close = trimmed.lastIndex(of: "]") else {
                    throw .corrupt(keyring: keyring, reason: "a group header without ]")
                }
                file.groups.append(Group(name: String(trimmed[trimmed.index(after: trimmed.startIndex)..<close]), values: [:]))
                continue
            }
            guard let equals = trimmed.firstIndex(of: "="), !file.groups.isEmpty else {
                throw .corrupt(keyring: keyring, reason: "a line that is neither a group nor key=value")
            }
            let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
            if key.contains("[") { continue }
            var value = trimmed[trimmed.index(after: equals)...]
            while value.first == " " || value.first == "\t" { value = value.dropFirst() }
            file.groups[file.groups.count - 1].values[key] = String(value)
        }
        return file
    }

    /// A value as GLib reports it; an unknown escape is kept as written, so nothing is lost.
    static func unescape(_ text: String) -> String { KeyFileString(escaped: text).text }
}
