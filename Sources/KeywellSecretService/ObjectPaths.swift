import Foundation
import KeywellCore

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

    /// Written into one new string, as an item's path is: the interpolation grew its buffer
    /// (two allocations on every ReadAlias).
    static func path(of collection: CollectionID) -> String {
        let segment = segment(for: collection)
        let count = collectionFolderBytes.count + segment.utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            let offset = buffer.initialize(fromContentsOf: collectionFolderBytes)
            return buffer[offset...].initialize(fromContentsOf: segment.utf8)
        }
    }

    static func path(of item: UUID, in collection: CollectionID) -> String {
        path(of: item, inCollectionSegment: segment(for: collection))
    }

    /// The paths of many items of one collection: its segment is encoded once.
    static func paths(of items: [UUID], in collection: CollectionID) -> [String] {
        guard !items.isEmpty else { return [] }
        let segment = segment(for: collection)
        return items.map { path(of: $0, inCollectionSegment: segment) }
    }

    private static let collectionFolderBytes = Array((root + "/collection/").utf8)

    /// `…/collection/<c>/<i>` written into one new string (every search result is one);
    /// `segment` is `segment(for:)` of the item's collection.
    static func path(of item: UUID, inCollectionSegment segment: String) -> String {
        let count = collectionFolderBytes.count + segment.utf8.count + 1 + 32
        return String(unsafeUninitializedCapacity: count) { buffer in
            var offset = buffer.initialize(fromContentsOf: collectionFolderBytes)
            offset = buffer[offset...].initialize(fromContentsOf: segment.utf8)
            buffer[offset] = slash
            item.writeCompactHex(to: UnsafeMutableBufferPointer(rebasing: buffer[(offset + 1)...]))
            return count
        }
    }

    static func aliasPath(_ alias: String) -> String { "\(root)/aliases/\(alias)" }
    static func sessionPath(_ number: UInt64) -> String { "\(root)/session/\(number)" }
    static func promptPath(_ number: UInt64) -> String { "\(root)/prompt/\(number)" }

    static func segment(for collection: CollectionID) -> String {
        switch collection {
        case .session:
            return sessionCollectionSegment
        case .keychain(let name):
            // Most names are plain: their own segment.
            if name != sessionCollectionSegment, name.utf8.allSatisfy(isPlain) { return name }
            var encoded = ""
            for (index, byte) in name.utf8.enumerated() {
                // A keychain named like the in-memory collection gets its first byte escaped.
                if isPlain(byte) && !(index == 0 && name == sessionCollectionSegment) {
                    encoded.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    encoded.unicodeScalars.append("_")
                    appendHex(byte, to: &encoded)
                }
            }
            return encoded
        }
    }

    static func segment(for item: UUID) -> String { item.compactHex }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendHex(_ byte: UInt8, to text: inout String) {
        text.unicodeScalars.append(Unicode.Scalar(hexDigits[Int(byte >> 4)]))
        text.unicodeScalars.append(Unicode.Scalar(hexDigits[Int(byte & 0x0f)]))
    }

    // MARK: Parsing

    /// Paths are parsed in place, as bytes: parsing runs several times per call (the bus layer,
    /// the handler, a session argument), and String and Substring indexing cost more than the rest.
    private typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    /// Calls `body` with the bytes of `text` (in place for native strings, which are contiguous).
    private static func withBytes<T>(_ text: some StringProtocol, _ body: (Bytes) -> T) -> T {
        if let result = text.utf8.withContiguousStorageIfAvailable({ body($0[...]) }) { return result }
        var copy = String(text)
        return copy.withUTF8 { body($0[...]) }
    }

    static func collection(fromSegment segment: Substring) -> CollectionID? {
        withBytes(segment, collection(fromSegment:))
    }

    static func collection(fromSegment segment: String) -> CollectionID? {
        withBytes(segment, collection(fromSegment:))
    }

    private static func collection(fromSegment segment: Bytes) -> CollectionID? {
        if segment.elementsEqual(sessionCollectionSegment.utf8) { return .session }
        guard !segment.isEmpty else { return nil }
        // Most names need no escapes: they are their own segment.
        guard segment.contains(UInt8(ascii: "_")) else {
            guard segment.allSatisfy(isPlain) else { return nil }
            return .keychain(String(decoding: segment, as: UTF8.self))
        }
        var bytes: [UInt8] = []
        var rest = segment
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "_") {
                guard let high = rest.popFirst().flatMap(hexValue), let low = rest.popFirst().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard let name = String(bytes: bytes, encoding: .utf8) else { return nil }
        let id = CollectionID.keychain(name)
        return self.segment(for: id).utf8.elementsEqual(segment) ? id : nil
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    /// Lowercase hex only, so a decoded UUID has exactly this one segment.
    static func item(fromSegment segment: Substring) -> UUID? {
        withBytes(segment, item(fromSegment:))
    }

    static func item(fromSegment segment: String) -> UUID? {
        withBytes(segment, item(fromSegment:))
    }

    private static func item(fromSegment segment: Bytes) -> UUID? {
        guard segment.count == 32 else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &raw) { buffer -> Bool in
            var index = segment.startIndex
            for offset in 0..<16 {
                guard let high = hexValue(segment[index]), let low = hexValue(segment[index + 1]) else { return false }
                buffer[offset] = high << 4 | low
                index += 2
            }
            return true
        }
        return ok ? UUID(uuid: raw) : nil
    }

    /// An item path's parts as GetSecrets reads a thousand of them: the UUID of a path that ends
    /// in `/` and 32 lowercase hex digits, and the bytes before that slash (`prefix`, valid only
    /// inside `body`). Nil for any other path: its last segment is then no item's, as
    /// `item(fromSegment:)` of it would say. Read in place with no index walks (the search for
    /// the last slash and the hex of each segment were 3.7 % of a GetSecrets of 1,000 items,
    /// docs/performance.md, "GetSecrets of many items"); what the prefix names is for the caller.
    static func withItemPathParts<T>(_ path: String, _ body: (UnsafeBufferPointer<UInt8>, UUID) -> T) -> T? {
        if let result = path.utf8.withContiguousStorageIfAvailable({ bytes in itemPathParts(bytes).map { body($0.prefix, $0.id) } }) {
            return result
        }
        var copy = path
        return copy.withUTF8 { bytes in itemPathParts(bytes).map { body($0.prefix, $0.id) } }
    }

    private static func itemPathParts(_ bytes: UnsafeBufferPointer<UInt8>) -> (prefix: UnsafeBufferPointer<UInt8>, id: UUID)? {
        let slashAt = bytes.count - 33
        guard slashAt >= 0, let base = bytes.baseAddress, base[slashAt] == slash else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var invalid: UInt8 = 0
        withUnsafeMutableBytes(of: &raw) { out in
            var digit = base + slashAt + 1
            for offset in 0..<16 {
                let high = nibble(digit[0]), low = nibble(digit[1])
                invalid |= high | low
                out[offset] = high << 4 | (low & 0x0f)
                digit += 2
            }
        }
        // A byte that was no lowercase hex digit set bit 4 (`nibble`).
        guard invalid & 0x10 == 0 else { return nil }
        return (UnsafeBufferPointer(start: base, count: slashAt), UUID(uuid: raw))
    }

    /// A lowercase hex digit's value, else 0x10 (or more).
    @inline(__always)
    private static func nibble(_ byte: UInt8) -> UInt8 {
        let decimal = byte &- UInt8(ascii: "0")
        if decimal < 10 { return decimal }
        let letter = byte &- UInt8(ascii: "a")
        return letter < 6 ? letter + 10 : 0x10
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
        withBytes(path, parse(bytes:))
    }

    private static func parse(bytes path: Bytes) -> SecretObject? {
        let rootEnd = path.startIndex + rootBytes.count
        guard path.count > rootBytes.count + 1, path[..<rootEnd].elementsEqual(rootBytes), path[rootEnd] == slash else {
            return path.elementsEqual(rootBytes) ? .service : nil
        }
        // At most three segments below the root: kind, name or number, item.
        let (kind, afterKind) = splitFirst(path[(rootEnd + 1)...])
        guard let afterKind else { return folders.first { $0.utf8.elementsEqual(kind) }.map { .folder($0) } }
        let (name, itemSegment) = splitFirst(afterKind)
        if let itemSegment, itemSegment.contains(slash) { return nil }
        if kind.elementsEqual("collection".utf8) {
            guard let id = collection(fromSegment: name) else { return nil }
            return address(.id(id), itemSegment: itemSegment)
        }
        if kind.elementsEqual("aliases".utf8) {
            guard !name.isEmpty else { return nil }
            return address(.alias(String(decoding: name, as: UTF8.self)), itemSegment: itemSegment)
        }
        guard itemSegment == nil else { return nil }
        if kind.elementsEqual("session".utf8) { return number(name).map { .session($0) } }
        if kind.elementsEqual("prompt".utf8) { return number(name).map { .prompt($0) } }
        return nil
    }

    private static let slash = UInt8(ascii: "/")

    /// The bytes before the first `/` and, if there is one, the bytes after it.
    private static func splitFirst(_ bytes: Bytes) -> (Bytes, Bytes?) {
        guard let index = bytes.firstIndex(of: slash) else { return (bytes, nil) }
        return (bytes[..<index], bytes[(index + 1)...])
    }

    /// Decimal digits as `String(number)` writes them (no sign, no leading zero), read in place:
    /// making the segment a string and the number a string again to compare was most of finding
    /// a session on every GetSecret.
    private static func number(_ segment: Bytes) -> UInt64? {
        guard let first = segment.first, first != UInt8(ascii: "0") || segment.count == 1 else { return nil }
        var number: UInt64 = 0
        for byte in segment {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, over) = number.multipliedReportingOverflow(by: 10)
            let (sum, carried) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !over, !carried else { return nil }
            number = sum
        }
        return number
    }

    private static func address(_ collection: CollectionAddress, itemSegment: Bytes?) -> SecretObject? {
        guard let itemSegment else { return .collection(collection) }
        return item(fromSegment: itemSegment).map { .item(collection, $0) }
    }
}
