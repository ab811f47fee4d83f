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
                    encoded += String(format: "_%02x", byte)
                }
            }
            return encoded
        }
    }

    static func segment(for item: UUID) -> String {
        withUnsafeBytes(of: item.uuid) { bytes in bytes.map { String(format: "%02x", $0) }.joined() }
    }

    static func collection(fromSegment segment: String) -> CollectionID? {
        if segment == sessionCollectionSegment { return .session }
        var bytes: [UInt8] = []
        var utf8 = segment.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "_") {
                guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) else {
                    return nil
                }
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        guard !bytes.isEmpty, let name = String(bytes: bytes, encoding: .utf8) else { return nil }
        let id = CollectionID.keychain(name)
        return self.segment(for: id) == segment ? id : nil
    }

    static func item(fromSegment segment: String) -> UUID? {
        let bytes = Array(segment.utf8)
        guard bytes.count == 32 else { return nil }
        var raw = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 {
            guard let high = hexValue(bytes[2 * index]), let low = hexValue(bytes[2 * index + 1]) else { return nil }
            raw[index] = high << 4 | low
        }
        let uuid = raw.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
        return Self.segment(for: uuid) == segment ? uuid : nil
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
        guard path.hasPrefix(root + "/") else { return nil }
        let parts = path.dropFirst(root.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard let kind = parts.first, folders.contains(kind) else { return nil }
        if parts.count == 1 { return .folder(kind) }
        switch (kind, parts.count) {
        case ("collection", 2), ("collection", 3):
            guard let id = collection(fromSegment: parts[1]) else { return nil }
            return address(.id(id), itemSegment: parts.count == 3 ? parts[2] : nil)
        case ("aliases", 2), ("aliases", 3):
            guard !parts[1].isEmpty else { return nil }
            return address(.alias(parts[1]), itemSegment: parts.count == 3 ? parts[2] : nil)
        case ("session", 2):
            return number(parts[1]).map { .session($0) }
        case ("prompt", 2):
            return number(parts[1]).map { .prompt($0) }
        default:
            return nil
        }
    }

    private static func number(_ segment: String) -> UInt64? {
        guard let number = UInt64(segment), String(number) == segment else { return nil }
        return number
    }

    private static func address(_ collection: CollectionAddress, itemSegment: String?) -> SecretObject? {
        guard let itemSegment else { return .collection(collection) }
        return item(fromSegment: itemSegment).map { .item(collection, $0) }
    }
}
