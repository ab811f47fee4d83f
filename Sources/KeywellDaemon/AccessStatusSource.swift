import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSecretService

/// `GetAccessStatus` (docs/access-control.md, "keywell doctor"): whether keywelld can show an
/// access question now, asked of the same choice every question makes, and the grants Always
/// Allow recorded, each checked against its item's list as it is now.
struct AccessStatusSource: Sendable {
    let questions: PinentryAccessQuestions
    let grants: AlwaysAllowRecord

    func reply(store: KeychainStore) -> (status: DBusValue, grants: DBusValue) {
        let now = questions.dialogNow()
        let status: [String: DBusValue] = [
            AccessStatusKey.canAsk: .bool(now.canAsk),
            AccessStatusKey.dialog: .string(now.dialog),
            AccessStatusKey.reason: .string(now.reason),
        ]
        let rows: [[String: DBusValue]] = grants.grants().map { grant in
            let reference = Self.bytes(hex: grant.reference)
            return [
                AccessGrantKey.identity: .string(grant.identity),
                AccessGrantKey.keychain: .string(grant.keychain),
                AccessGrantKey.label: .string(grant.label),
                AccessGrantKey.time: .int64(grant.time),
                AccessGrantKey.holds: .bool(reference.map { store.items.stillTrusts(grant.identity, reference: $0) } ?? false),
            ]
        }
        return (.stringVariantDict(status), .stringVariantDictArray(rows))
    }

    /// Lowercase or uppercase hex as bytes; nil for anything else.
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index ..< index + 2], as: UTF8.self), radix: 16) else { return nil }
            result.append(byte)
        }
        return result
    }
}
