import FoundationEssentials
import KeywellAPI
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// Keywell's own encrypted export and import (docs/export-import.md). The file is opened by
/// the caller and passed as a descriptor; the passphrase travels as bytes, never in argv.
extension KeywellClient {
    /// How long an export or import may take: a file at the caps holds 100,000 items, far more
    /// work than an ordinary call's timeout allows, and a caller that gave up early would report
    /// a failure for an import that still commits.
    public static let transferTimeout: Duration = .seconds(600)

    /// Counts of what an import did.
    public struct ImportCounts: Sendable, Equatable {
        public var added: Int
        public var replaced: Int
        public var skipped: Int
    }

    /// Writes every item of `keychains` to `fd`, sealed under `passphrase`; returns the item count.
    /// The items written, and the ThisDeviceOnly items left out (they stay on this machine).
    public func exportKeychains(
        _ keychains: [String], to fd: Int32, passphrase: SecretBytes
    ) throws(KeychainError) -> (items: Int, thisDeviceOnly: Int) {
        let reply = try call(.exportKeychains, sending: [passphrase], timeout: Self.transferTimeout) {
            [.stringArray(keychains), .unixFD(fd), $0[0]]
        }
        return try Self.exportCounts(reply, .exportKeychains)
    }

    /// An export's reply: items written, ThisDeviceOnly items left out.
    static func exportCounts(_ reply: [DBusValue], _ method: NativeMethod) throws(KeychainError) -> (items: Int, thisDeviceOnly: Int) {
        guard reply.count == 2, let items = reply[0].uint32Value, let leftOut = reply[1].uint32Value else {
            throw KeychainError(SecStatus.io, detail: "\(method.name) reply without its counts")
        }
        return (Int(items), Int(leftOut))
    }

    /// The keychains an export file names, and its number of items.
    public func inspectExport(_ fd: Int32, passphrase: SecretBytes) throws(KeychainError) -> (keychains: [String], items: Int) {
        let reply = try call(.inspectExport, sending: [passphrase], timeout: Self.transferTimeout) { [.unixFD(fd), $0[0]] }
        guard reply.count == 2, let names = reply[0].arrayElements?.compactMap(\.stringValue), let count = reply[1].uint32Value else {
            throw KeychainError(SecStatus.io, detail: "\(NativeMethod.inspectExport.name) reply is malformed")
        }
        return (names, Int(count))
    }

    /// Imports the file into `keychain` ("" = each item into the keychain it came from).
    public func importExport(_ fd: Int32, passphrase: SecretBytes, into keychain: String, policy: String) throws(KeychainError) -> ImportCounts {
        let reply = try call(.importExport, sending: [passphrase], timeout: Self.transferTimeout) {
            [.unixFD(fd), $0[0], .string(keychain), .string(policy)]
        }
        let summary = try WireCodec.replyDictionary(reply.first, of: .importExport)
        func count(_ key: String) -> Int { summary[key]?.integerValue.map { Int($0) } ?? 0 }
        return ImportCounts(added: count(ImportSummaryKey.added), replaced: count(ImportSummaryKey.replaced),
                            skipped: count(ImportSummaryKey.skipped))
    }
}
