import KeywellIdentity
import KeywellProtocol

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
        let label = Self.shown(items.first?.label ?? "")
        let more = items.count > 1 ? " and \(items.count - 1) more item\(items.count == 2 ? "" : "s")" : ""
        var text = "“\(Self.shown(caller.displayName))” wants to use your confidential information stored in “\(label)”\(more) in your keychain."
        if let identity = caller.identity {
            text += "\n\n\(Self.shown(identity.string, limit: Self.identityLimit))\n"
            switch identity.strength {
            case .strong: text += "Identity: strong. \(identity.strengthReason)"
            case .weak: text += "Identity: weak, \(identity.strengthReason)"
            }
            if let note = identity.note { text += "\n\(Self.shown(note, limit: Self.identityLimit))" }
        } else {
            text += "\n\nThe program could not be identified: Always Allow is not offered."
        }
        return text
    }

    /// Characters of a label or app name shown; longer ones end in "…" so that they cannot push
    /// the identity out of the dialog.
    static let nameLimit = 200
    static let identityLimit = 1200

    /// `text` as one line of the dialog: a label or a path is the caller's to choose, so line
    /// breaks and other control characters become U+FFFD and cannot forge lines of their own.
    static func shown(_ text: String, limit: Int = nameLimit) -> String {
        var result = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit else {
                result.append("…")
                break
            }
            let isControl = scalar.properties.generalCategory == .control
                || scalar.properties.generalCategory == .lineSeparator || scalar.properties.generalCategory == .paragraphSeparator
            result.append(isControl ? "\u{FFFD}" : scalar)
            count += 1
        }
        return String(result)
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

    /// `ask(_:timeoutSeconds:)` that closes the dialog, answering `.deny`, when `withdrawal` is
    /// withdrawn meanwhile. The default cannot close it: the dialog runs to its answer.
    func ask(_ question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal) -> AccessAnswer
}

extension AccessQuestionAsking {
    public func ask(_ question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal) -> AccessAnswer {
        ask(question, timeoutSeconds: timeoutSeconds)
    }
}
