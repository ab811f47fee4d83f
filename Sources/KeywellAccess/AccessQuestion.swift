import KeywellIdentity
import KeywellProtocol

/// One access question as the person sees it (docs/access-control.md "The question", "The
/// words"): who asks, for which items, and the words every prompter shows. The prompter
/// (pinentry, gcr) only escapes and displays them.
public struct AccessQuestion: Sendable {
    public let caller: AccessCaller
    /// The items asked about, the first one named, the others counted.
    public let items: [AccessItem]
    /// The items the answer also covers though nobody asked for them yet: the others of the same
    /// keychains whose list is exactly an asked item's (docs/access-control.md, "One answer per
    /// program and list"). Counted in the words, never named one by one.
    public let companions: [AccessItem]
    /// The program as people know it: its desktop entry's `Name=`, else the identity's own name.
    public let programName: String
    /// Who saved the companions, when their lists all name one program: what the words call it.
    let companionsMaker: String?

    public init(caller: AccessCaller, items: [AccessItem], companions: [AccessItem] = [],
                naming: any ProgramNaming = IdentityNamesOnly()) {
        self.caller = caller
        self.items = items
        self.companions = companions
        self.programName = caller.identity.flatMap(naming.name(of:)) ?? caller.displayName
        let makers = Set(companions.map(\.trusted))
        if makers.count == 1, let only = makers.first, only.count == 1 {
            companionsMaker = naming.name(ofEntry: only[0])
        } else {
            companionsMaker = nil
        }
    }

    /// Every item the answer covers: the asked ones, then the companions.
    public var covered: [AccessItem] { items + companions }

    public static let title = "Keychain access"
    public static let allowButton = "Allow"
    public static let alwaysAllowButton = "Always Allow"
    public static let denyButton = "Deny"
    /// Always Allow as a check box beside Allow, where the dialog has two buttons (gcr's).
    public static let alwaysAllowChoice = "Always allow this program"

    /// The dialog's heading, for prompters that show one above the description (gcr's message).
    public var heading: String { "Allow “\(DialogText.line(programName))” to use your keychain?" }

    /// `“<program>” wants to use “<label>” [and N more items] from your keychain “<path>”.`, then
    /// whether the program changed since the items trusted it, then what the answers do. Plain
    /// text with newlines: a prompter escapes it for its own protocol. No identity, no hash.
    public var description: String { description(alwaysAllowAsChoice: false) }

    /// `description`, telling Always Allow as the check box (`alwaysAllowChoice`) when
    /// `alwaysAllowAsChoice`, else as a button.
    public func description(alwaysAllowAsChoice: Bool) -> String {
        let program = DialogText.line(programName)
        let label = DialogText.line(items.first?.label ?? "")
        let more = items.count > 1 ? " and \(items.count - 1) more item\(items.count == 2 ? "" : "s")" : ""
        var text = "“\(program)” wants to use “\(label)”\(more) from your \(keychainWords)\(companionWords)."
        if programChanged {
            let those = items.count > 1 ? "these items" : "this item"
            text += "\n\n“\(program)” has changed since \(those) trusted it: it was updated, or another program took its place."
        }
        if offersAlwaysAllow {
            let always = alwaysAllowAsChoice ? "with “\(Self.alwaysAllowChoice)” ticked" : "Always Allow"
            text += "\n\nAllow lets it use \(covered.count > 1 ? "them" : "it") until the keychain locks; \(always), from now on."
        } else {
            text += "\n\nThe program could not be identified: Always Allow is not offered."
        }
        return text
    }

    /// `, and the 2 other items “Chromium” saved there` (their lists all name that one program), else
    /// `, and the 2 other items there that trust the same programs`; nothing without companions.
    private var companionWords: String {
        guard !companions.isEmpty else { return "" }
        let count = companions.count == 1 ? "the other item" : "the \(companions.count) other items"
        if let companionsMaker { return ", and \(count) “\(DialogText.line(companionsMaker))” saved there" }
        return ", and \(count) there that trust the same programs"
    }

    /// `keychain “<path>”`, as `keywell list-keychains` prints it; for items of several
    /// keychains, the first and how many more.
    private var keychainWords: String {
        var keychains: [String] = []
        for item in items where !keychains.contains(item.keychain) {
            keychains.append(item.keychain)
            if keychains.count > Self.keychainsCounted { break }
        }
        let first = DialogText.line(keychains.first ?? "")
        guard keychains.count > 1 else { return "keychain “\(first)”" }
        let others = keychains.count - 1
        let count = keychains.count > Self.keychainsCounted ? "more" : "\(others) more"
        return "keychain “\(first)” and \(count) keychain\(others == 1 ? "" : "s")"
    }

    /// Keychains counted by name in one question; beyond that, "more".
    private static let keychainsCounted = 64

    /// Whether an item asked about trusts this program as it was before a change: an identity
    /// with the same path (and script) and another hash (docs/access-control.md, "The words").
    public var programChanged: Bool {
        guard let own = caller.identityString else { return false }
        let unhashed = AccessList.unhashed(own)
        return items.contains { item in item.trusted.contains { $0 != own && AccessList.unhashed($0) == unhashed } }
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

    /// The answer and, for a Deny, why (for the log line every denial writes). The default
    /// says the person answered Deny.
    func reply(to question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal?) -> AccessReply
}

extension AccessQuestionAsking {
    public func ask(_ question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal) -> AccessAnswer {
        ask(question, timeoutSeconds: timeoutSeconds)
    }

    public func reply(to question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal?) -> AccessReply {
        let answer = if let withdrawal {
            ask(question, timeoutSeconds: timeoutSeconds, withdrawal: withdrawal)
        } else {
            ask(question, timeoutSeconds: timeoutSeconds)
        }
        return AccessReply(answer, denial: AccessReply.answeredDeny)
    }
}

/// An answer with the reason a Deny came about.
public struct AccessReply: Sendable {
    public let answer: AccessAnswer
    /// Why the answer is Deny ("answered Deny", "no dialog could be shown: …"); nil otherwise.
    public let denialReason: String?

    public init(_ answer: AccessAnswer, denial reason: String) {
        self.answer = answer
        self.denialReason = answer == .deny ? reason : nil
    }

    public static let answeredDeny = "answered Deny"
    public static func noDialog(_ why: String) -> String { "no dialog could be shown: \(why)" }
}
