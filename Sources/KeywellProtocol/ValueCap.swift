/// The byte caps of single values (`ServiceLimits`), and the one wording of their refusal: it
/// names the value and the cap, never the content (a label or a secret may be private, and a
/// 50 MB one must not come back in the error).
///
/// ```swift
/// if let refusal = ValueCap.label.refusal(label.utf8.count, "the label") { throw .param(refusal) }
/// // "the label is 50000000 bytes; at most 16384 are accepted"
/// ```
public enum ValueCap: Sendable {
    case secret, label, attributeValue, attributeName, keychainName, keychainLabel

    public var bytes: Int {
        switch self {
        case .secret: ServiceLimits.bytesPerSecret
        case .label: ServiceLimits.bytesPerLabel
        case .attributeValue: ServiceLimits.bytesPerAttributeValue
        case .attributeName: ServiceLimits.bytesPerAttributeName
        case .keychainName: ServiceLimits.bytesPerKeychainName
        case .keychainLabel: ServiceLimits.bytesPerKeychainLabel
        }
    }

    /// nil when `byteCount` is within the cap, else the message that refuses `what`.
    public func refusal(_ byteCount: Int, _ what: @autoclosure () -> String) -> String? {
        byteCount <= bytes ? nil : "\(what()) is \(byteCount) bytes; at most \(bytes) are accepted"
    }
}
