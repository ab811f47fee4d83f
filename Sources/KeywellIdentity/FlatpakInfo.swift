import KeywellSystem

/// What `/.flatpak-info` says about a sandboxed app: its id and its Flatpak instance.
///
/// The file is a GLib key file that Flatpak writes when it makes the sandbox. It is parsed
/// strictly: anything Flatpak would not write (text outside a group, a group or key twice, an
/// escape GLib does not know, control bytes) makes the whole file untrusted rather than guessed
/// at. Which group names the app follows xdg-desktop-portal: `[Runtime]` when the sandbox runs
/// a runtime itself, else `[Application]`.
public struct FlatpakInfo: Sendable, Equatable {
    public let appID: String
    public let instanceID: String

    /// Larger files are refused unread; Flatpak's own are about a kilobyte.
    public static let maximumSize = 64 * 1024

    public enum ParseError: Error, Sendable, Equatable {
        case tooLarge
        case malformed(line: Int, String)
        case missing(String)
        case invalid(String)
    }

    public init(appID: String, instanceID: String) {
        self.appID = appID
        self.instanceID = instanceID
    }

    public init(parsing bytes: some Collection<UInt8>) throws(ParseError) {
        guard bytes.count <= Self.maximumSize else { throw .tooLarge }
        let groups = try Self.groups(bytes)
        let appGroup = groups["Runtime"] != nil ? "Runtime" : "Application"
        guard let appID = groups[appGroup]?["name"] else { throw .missing("[\(appGroup)] name") }
        guard Self.isValidAppID(appID) else { throw .invalid("app id \(appID.debugDescription)") }
        guard let instanceID = groups["Instance"]?["instance-id"] else { throw .missing("[Instance] instance-id") }
        guard Self.isValidInstanceID(instanceID) else { throw .invalid("instance id \(instanceID.debugDescription)") }
        self.init(appID: appID, instanceID: instanceID)
    }

    /// Flatpak's app id rule as the portal checks it: 1–255 bytes, at least two dot-separated
    /// elements, none empty, of ASCII letters, digits and `_` (and `-` in the last element).
    public static func isValidAppID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2, elements.allSatisfy({ !$0.isEmpty }) else { return false }
        for (index, element) in elements.enumerated() {
            let dashAllowed = index == elements.count - 1
            guard element.allSatisfy({ isNameByte($0) || (dashAllowed && $0 == UInt8(ascii: "-")) }) else { return false }
        }
        return true
    }

    /// Flatpak numbers its instances (`%u` of a random number); anything else could name a
    /// path outside the instances folder.
    public static func isValidInstanceID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        return (1...20).contains(bytes.count) && bytes.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }

    private static func groups(_ bytes: some Collection<UInt8>) throws(ParseError) -> [String: [String: String]] {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .malformed(line: 0, "not UTF-8") }
        var groups: [String: [String: String]] = [:]
        var current: String?
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = rawLine.drop { $0 == " " || $0 == "\t" }
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7f }) {
                throw .malformed(line: number, "control character")
            }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else { throw .malformed(line: number, "bad group header") }
                let name = String(line.dropFirst().dropLast())
                guard !name.contains("["), !name.contains("]") else { throw .malformed(line: number, "bad group name") }
                guard groups[name] == nil else { throw .malformed(line: number, "group [\(name)] twice") }
                groups[name] = [:]
                current = name
                continue
            }
            guard let group = current else { throw .malformed(line: number, "key outside a group") }
            guard let equals = line.firstIndex(of: "=") else { throw .malformed(line: number, "no '='") }
            let key = String(line[..<equals]).trimmingTrailingBlanks()
            guard isValidKey(key) else { throw .malformed(line: number, "bad key") }
            let value = try unescape(line[line.index(after: equals)...].drop { $0 == " " || $0 == "\t" }, line: number)
            guard groups[group]?[key] == nil else { throw .malformed(line: number, "key \(key) twice in [\(group)]") }
            groups[group]?[key] = value
        }
        return groups
    }

    /// Key names as GLib allows them, with an optional `[locale]` suffix.
    private static func isValidKey(_ key: String) -> Bool {
        guard !key.isEmpty else { return false }
        var base = Substring(key)
        if base.hasSuffix("]"), let open = base.firstIndex(of: "[") { base = base[..<open] }
        return !base.isEmpty && base.utf8.allSatisfy { isNameByte($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// GLib's reading of a value; an escape it refuses is refused here too.
    private static func unescape(_ value: Substring, line: Int) throws(ParseError) -> String {
        let string = KeyFileString(escaped: value)
        guard string.isValid else { throw .malformed(line: line, "unknown escape") }
        return string.text
    }
}

extension String {
    fileprivate func trimmingTrailingBlanks() -> String {
        var text = Substring(self)
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
