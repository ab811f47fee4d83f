/// The one error type of Keywell: an OSStatus, Apple's text for it, and optional detail
/// (which keychain, which attribute) for people reading logs and CLI messages.
public struct KeychainError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: OSStatus
    public let detail: String?

    public init(_ status: OSStatus, detail: String? = nil) {
        self.status = status
        self.detail = detail
    }

    /// Apple's message text for the status.
    public var message: String { SecStatus.message(for: status) }

    /// `-25299: The specified item already exists in the keychain.`: the D-Bus error message shape.
    public var wireMessage: String {
        var text = "\(status): \(message)"
        if let detail { text += " (\(detail))" }
        return text
    }

    public var description: String { wireMessage }

    /// `The specified keychain could not be found. (work)`: Apple's text, then the detail — what
    /// Keywell's own commands print, having no `security` wording to match.
    public var explanation: String {
        detail.map { "\(message) (\($0))" } ?? message
    }

    /// `org.keywell.Keychain1.Error.DuplicateItem`.
    public var dbusErrorName: String {
        KeywellNames.errorPrefix + (SecStatus.name(for: status) ?? "Unknown")
    }

    /// Rebuilds an error from a D-Bus error reply of the native API, or nil when the name is not ours.
    public init?(dbusErrorName name: String, message: String?) {
        guard name.hasPrefix(KeywellNames.errorPrefix) else { return nil }
        let short = String(name.dropFirst(KeywellNames.errorPrefix.count))
        var status = SecStatus.status(forName: short)
        var detail: String?
        if let message, let colon = message.firstIndex(of: ":"), let code = Int32(message[..<colon]) {
            status = status ?? code
            // Keep only what we appended after Apple's text.
            let text = message[message.index(after: colon)...].trimmingLeadingSpace()
            let apple = SecStatus.message(for: code)
            if text.hasPrefix(apple) {
                let rest = text.dropFirst(apple.count).trimmingLeadingSpace()
                if rest.hasPrefix("("), rest.hasSuffix(")") { detail = String(rest.dropFirst().dropLast()) }
            }
        }
        guard let status else { return nil }
        self.init(status, detail: detail)
    }

    public static func param(_ detail: String? = nil) -> KeychainError { KeychainError(SecStatus.param, detail: detail) }

    /// A read or change the person denied, or no dialog could ask about (docs/access-control.md,
    /// "A denial is never silent"): `errSecAuthFailed` with this detail, which `keywell` knows.
    public static let accessDeniedDetail = "access to the item was denied"
    public static var accessDenied: KeychainError { KeychainError(SecStatus.authFailed, detail: accessDeniedDetail) }
}

extension Substring {
    fileprivate func trimmingLeadingSpace() -> Substring { drop(while: { $0 == " " }) }
}
