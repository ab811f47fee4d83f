/// The snap a caller runs in, from the AppArmor label the bus reports for its connection
/// (`LinuxSecurityLabel`: `snap.firefox.firefox (enforce)` and a trailing NUL).
public enum SnapLabel {
    public struct Parsed: Sendable, Equatable {
        /// `snap.<snap>.<app>` or `snap.<snap>.hook.<hook>`, without the mode.
        public let label: String
        /// False in complain mode, where AppArmor only logs.
        public let enforced: Bool

        public init(label: String, enforced: Bool) {
            self.label = label
            self.enforced = enforced
        }
    }

    /// Longer labels are not AppArmor's (its profile names are far shorter).
    public static let maximumLength = 1024

    /// nil when the label is not a snap's (unconfined, another AppArmor profile, an SELinux
    /// context); throws when it starts like a snap's but is not one a kernel would report.
    public static func parse(_ bytes: [UInt8]) throws(IdentityError) -> Parsed? {
        var bytes = bytes[...]
        if bytes.last == 0 { bytes = bytes.dropLast() }
        guard bytes.starts(with: Array("snap.".utf8)) else { return nil }
        guard bytes.count <= maximumLength, !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else {
            throw .untrustedSandbox("malformed snap security label")
        }
        var label = Substring(text)
        var enforced = true
        if label.hasSuffix(" (enforce)") {
            label = label.dropLast(" (enforce)".count)
        } else if label.hasSuffix(" (complain)") {
            label = label.dropLast(" (complain)".count)
            enforced = false
        }
        let parts = label.split(separator: ".", omittingEmptySubsequences: false)
        let allowed = { (byte: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "+")
        }
        guard parts.count >= 3, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy(allowed) }) else {
            throw .untrustedSandbox("snap security label \(text.debugDescription) names no snap app")
        }
        return Parsed(label: String(label), enforced: enforced)
    }
}
