import Foundation

/// Which collection: a keychain (by the name outputs give it) or the in-memory `session` one.
enum CollectionID: Hashable, Sendable {
    case keychain(String)
    case session
}

/// How a call names a collection: its own path, or an alias path that stands for it.
enum CollectionAddress: Hashable, Sendable {
    case id(CollectionID)
    case alias(String)
}

/// What an object path under `/org/freedesktop/secrets` names.
enum SecretObject: Hashable, Sendable {
    case service
    case collection(CollectionAddress)
    case item(CollectionAddress, UUID)
    case session(UInt64)
    case prompt(UInt64)
    /// `/collection`, `/aliases`, `/session`, `/prompt`: nodes that only hold children.
    case folder(String)
}

/// Object paths of the Secret Service objects.
///
/// - `/org/freedesktop/secrets/collection/<c>`: `<c>` is the keychain's name with every byte
///   outside `[A-Za-z0-9]` written `_xx` (lowercase hex; `_` itself too, so decoding is
///   unambiguous): `my.keys` → `my_2ekeys`. `session` is the in-memory collection, so a keychain
///   named "session" is `_73ession`.
/// - `/collection/<c>/<i>`: `<i>` is the item's UUID in lowercase hex without dashes.
/// - `/aliases/<alias>` (and items below it) stand for the collection the alias names.
/// - `/session/<n>`, `/prompt/<n>`: numbers counting up from 1.
/// Each object has exactly one path: encodings other than the canonical one name nothing.
enum ObjectPaths {
    static let root = SecretServiceNames.servicePath
    private static let rootBytes = Array(root.utf8)
    static let folders = ["collection", "aliases", "session", "prompt"]
    static let sessionCollectionSegment = "session"

    static func path(of collection: CollectionID) -> String {
        "\(root)/collection/\(segment(for: collection))"
    }

    static func path(of item: UUID, in collection: CollectionID) -> String {
        path(of: collection) + "/" + segment(for: item)
    }

    static func aliasPath(_ alias: String) -> String { "\(root)/aliases/\(alias)" }
    static func sessionPath(_ number: UInt64) -> String { "\(root)/session/\(number)" }
    static func promptPath(_ number: UInt64) -> String { "\(root)/prompt/\(number)" }

    static func segment(for collection: CollectionID) -> String {
        switch collection {
        case .session:
            return sessionCollectionSegment
        case .keychain(let name):
            var encoded = ""
            for (index, byte) in name.utf8.enumerated() {
                let isPlain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                // A keychain named like the in-memory collection gets its first byte escaped.
                if isPlain && !(index == 0 && name == sessionCollectionSegment) {
                    encoded.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    encoded.unicodeScalars.append("_")
                    appendHex(byte, to: &encoded)
                }
            }
            return encoded
        }
    }

    static func segment(for item: UUID) -> String {
        // By hand: String(format:) costs microseconds per byte, and GetSecrets names 1,000 items.
        withUnsafeBytes(of: item.uuid) { bytes in
            String(unsafeUninitializedCapacity: 32) { buffer in
                for (index, byte) in bytes.enumerated() {
                    buffer[2 * index] = hexDigits[Int(byte >> 4)]
                    buffer[2 * index + 1] = hexDigits[Int(byte & 0x0f)]
                }
                return 32
            }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendHex(_ byte: UInt8, to text: inout String) {
        text.unicodeScalars.append(Unicode.Scalar(hexDigits[Int(byte >> 4)]))
        text.unicodeScalars.append(Unicode.Scalar(hexDigits[Int(byte & 0x0f)]))
    }

    static func collection(fromSegment segment: Substring) -> CollectionID? {
        if segment == sessionCollectionSegment { return .session }
        guard !segment.isEmpty else { return nil }
        // Most names need no escapes: they are their own segment.
        guard segment.utf8.contains(UInt8(ascii: "_")) else {
            guard segment.utf8.allSatisfy(isPlain) else { return nil }
            return .keychain(String(segment))
        }
        var bytes: [UInt8] = []
        var utf8 = segment.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "_") {
                guard let high = utf8.popFirst().flatMap(hexValue), let low = utf8.popFirst().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard let name = String(bytes: bytes, encoding: .utf8) else { return nil }
        let id = CollectionID.keychain(name)
        return self.segment(for: id) == segment ? id : nil
    }

    static func collection(fromSegment segment: String) -> CollectionID? {
        collection(fromSegment: segment[...])
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    /// Lowercase hex only, so a decoded UUID has exactly this one segment.
    static func item(fromSegment segment: Substring) -> UUID? {
        let bytes = segment.utf8
        guard bytes.count == 32 else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &raw) { buffer -> Bool in
            var index = bytes.startIndex
            for offset in 0..<16 {
                guard let high = hexValue(bytes[index]) else { return false }
                index = bytes.index(after: index)
                guard let low = hexValue(bytes[index]) else { return false }
                index = bytes.index(after: index)
                buffer[offset] = high << 4 | low
            }
            return true
        }
        return ok ? UUID(uuid: raw) : nil
    }

    static func item(fromSegment segment: String) -> UUID? {
        item(fromSegment: segment[...])
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// What `path` names, or nil when it is not one of ours.
    static func parse(_ path: String) -> SecretObject? {
        if path == root { return .service }
        // Bytes, not Characters: splitting by Character costs grapheme breaking on every call.
        let utf8 = path.utf8
        let slash = UInt8(ascii: "/")
        guard utf8.count > rootBytes.count + 1, utf8.starts(with: rootBytes) else { return nil }
        let separator = utf8.index(utf8.startIndex, offsetBy: rootBytes.count)
        guard utf8[separator] == slash else { return nil }
        let parts = utf8[utf8.index(after: separator)...].split(separator: slash, maxSplits: 3, omittingEmptySubsequences: false)
            .map { Substring($0) }
        guard let kind = parts.first, parts.count <= 3 else { return nil }
        if parts.count == 1 { return folders.contains(String(kind)) ? .folder(String(kind)) : nil }
        switch kind {
        case "collection":
            guard let id = collection(fromSegment: parts[1]) else { return nil }
            return address(.id(id), itemSegment: parts.count == 3 ? parts[2] : nil)
        case "aliases":
            guard !parts[1].isEmpty else { return nil }
            return address(.alias(String(parts[1])), itemSegment: parts.count == 3 ? parts[2] : nil)
        case "session" where parts.count == 2:
            return number(parts[1]).map { .session($0) }
        case "prompt" where parts.count == 2:
            return number(parts[1]).map { .prompt($0) }
        default:
            return nil
        }
    }

    private static func number(_ segment: Substring) -> UInt64? {
        guard let number = UInt64(segment), String(number) == segment else { return nil }
        return number
    }

    private static func address(_ collection: CollectionAddress, itemSegment: Substring?) -> SecretObject? {
        guard let itemSegment else { return .collection(collection) }
        return item(fromSegment: itemSegment).map { .item(collection, $0) }
    }
}
