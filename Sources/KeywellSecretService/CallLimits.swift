import KeywellDBus
import KeywellProtocol

/// Enforcing `ServiceLimits` on Secret Service calls: input over a cap is LimitsExceeded, with
/// the cap in the message, before any work is done.
enum CallLimits {
    /// Long loops ask `DBusMethodCall.checkStillWanted()` once per this many items: often enough
    /// to stop within milliseconds, rarely enough to cost nothing.
    static let itemsBetweenChecks = 1024

    static func exceeded(_ message: String) -> DBusError {
        DBusError(name: DBusError.Name.limitsExceeded, message: message)
    }

    /// `what` reads as "GetSecrets takes" or "A search has".
    static func check(_ count: Int, atMost limit: Int, _ what: @autoclosure () -> String, _ things: String) throws(DBusError) {
        guard count > limit else { return }
        throw exceeded("\(what()) at most \(limit) \(things), got \(count)")
    }

    /// Search queries and item attributes: how many, and the bytes of each name and value
    /// (a message never repeats a name: it could be the huge one).
    static func checkAttributes(_ attributes: [String: String], _ what: @autoclosure () -> String) throws(DBusError) {
        try check(attributes.count, atMost: ServiceLimits.attributesPerItem, what(), "attributes")
        for (name, value) in attributes {
            try checkBytes(name.utf8.count, .attributeName, "An attribute's name")
            try checkBytes(value.utf8.count, .attributeValue, "An attribute's value")
        }
    }

    /// One value's bytes against its cap (`ValueCap`); `what` reads as "The label".
    static func checkBytes(_ byteCount: Int, _ cap: ValueCap, _ what: @autoclosure () -> String) throws(DBusError) {
        if let refusal = cap.refusal(byteCount, what()) { throw exceeded(refusal) }
    }
}
