import KeywellProtocol
import KeywellIdentity

/// One access question as the person sees it (docs/access-control.md "The question"): who asks,
/// for which items, and the words every prompter shows. The prompter (pinentry, gcr) only
/// escapes and displays them.
public struct AccessQuestion: Sendable {
    public let caller: AccessCaller
    /// The items asked about, the first one named, the others counted.
    public let items: [AccessItem]

    public init(caller: AccessCaller, items: [AccessItem]) {
        self.caller = caller
        self.items = items
    }

    public static let title = "Keychain access"
    public static let allowButton = "Allow"
    public static let alwaysAllowButton = "Always Allow"
    public static let denyButton = "Deny"

    /// `“<app>” wants to use your confidential information stored in “<label>” in your keychain.`,
    /// `and N more items` for several, then the identity and how strong it is on lines of their own.
    /// Plain text with newlines: a prompter escapes it for its own protocol.
    public var description: String {
        let label = items.first?.label ?? ""
        let more = items.count > 1 ? " and \(items.count - 1) more item\(items.count == 2 ? "" : "s")" : ""
        var text = "“\(caller.displayName)” wants to use your confidential information stored in “\(label)”\(more) in your keychain."
        if let identity = caller.identity {
            text += "\n\n\(identity.string)\n"
            switch identity.strength {
            case .strong: text += "Identity: strong. \(identity.strengthReason)"
            case .weak: text += "Identity: weak, \(identity.strengthReason)"
            }
            if let note = identity.note { text += "\n\(note)" }
        } else {
            text += "\n\nThe program could not be identified: Always Allow is not offered."
        }
        return text
    }

    /// Whether Always Allow can be answered: only an identified caller can join a list.
    public var offersAlwaysAllow: Bool { caller.identityString != nil }
}

/// Shows access questions to the person: implemented where the prompters live (pinentry, gcr).
public protocol AccessQuestionAsking: Sendable {
    /// Shows `question` and waits for the answer, at most `timeoutSeconds`; blocks the calling
    /// thread. Anything but a clear Allow or Always Allow (a dismissed dialog, a crash, a
    /// timeout, no prompter at all) is `.deny`.
    func ask(_ question: AccessQuestion, timeoutSeconds: Int) -> AccessAnswer
}
