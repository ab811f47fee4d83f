/// An app id as xdg-desktop-portal passes it: a Flatpak id (`org.example.App`) or a Snap one
/// (`snap.name`). Both follow the D-Bus well-known-name grammar, which is checked here before the
/// id goes into a keychain attribute or a log line: at least two elements separated by dots,
/// each of ASCII letters, digits, `_` and `-`, none starting with a digit, at most
/// `maximumLength` bytes. The empty id (a caller outside any sandbox) is refused: such a caller
/// reaches the Secret Service itself (docs/portal.md).
public struct PortalAppID: Sendable, Hashable, CustomStringConvertible {
    /// The D-Bus limit for names, and so Flatpak's.
    public static let maximumLength = 255

    public let value: String
    public var description: String { value }

    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case empty
        case tooLong(Int)
        case malformed

        public var description: String {
            switch self {
            case .empty: "no app id (the caller is not sandboxed)"
            case .tooLong(let length): "the app id is \(length) bytes long (at most \(PortalAppID.maximumLength))"
            case .malformed: "the app id is not of the form org.example.App"
            }
        }
    }

    public init(_ text: String) throws(Refusal) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= Self.maximumLength else { throw .tooLong(bytes.count) }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { throw .malformed }
        for element in elements {
            guard let first = element.first, !Self.isDigit(first), element.allSatisfy(Self.isNameByte) else { throw .malformed }
        }
        value = text
    }

    /// The access-control identity of the Flatpak app this id names (`flatpak:<id>`); nil for a
    /// Snap id (`snap.<name>`), which names a snap but not its app's AppArmor label.
    public var flatpakIdentity: String? { value.hasPrefix("snap.") ? nil : "flatpak:\(value)" }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}
