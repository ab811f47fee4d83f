import KeywellProtocol

/// The log line every denial writes (docs/access-control.md, "A denial is never silent"): the
/// program by name and identity, the items by label, and why. Labels are not secret; secrets
/// never reach this line. Each value is one line of text (control characters shown as U+FFFD).
public struct AccessDenialLine: Sendable {
    /// Labels named in one line; the rest are counted.
    public static let labelsNamed = 8
    /// Characters of one identity printed: a path and two hashes fit many times over.
    static let identityLimit = 1200

    public let text: String

    public init(programName: String, caller: AccessCaller, items: [AccessItem], reason: String) {
        let identity = caller.identityString.map { DialogText.oneLine($0, limit: Self.identityLimit) } ?? "unidentified"
        let named = items.prefix(Self.labelsNamed).map { "“\(DialogText.oneLine($0.label, limit: DialogText.nameLimit))”" }
        var labels = named.joined(separator: ", ")
        if items.count > Self.labelsNamed { labels += " and \(items.count - Self.labelsNamed) more" }
        let keychain = items.first.map { " in \(DialogText.oneLine($0.keychain, limit: DialogText.nameLimit))" } ?? ""
        text = "access denied: “\(DialogText.oneLine(programName, limit: DialogText.nameLimit))” (\(identity)) may not use "
            + "\(items.count) item\(items.count == 1 ? "" : "s") (\(labels))\(keychain): \(DialogText.oneLine(reason, limit: DialogText.nameLimit))"
    }

}
