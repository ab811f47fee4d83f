import Foundation
import KeyringImport
import KeywellCore
import KeywellProtocol
import KeywellSecretService

/// `ExportGnomeKeyring`: a keychain written as a gnome-keyring binary keyring file, the way
/// back (docs/migration.md). Every item goes with its Secret Service view: label, attributes,
/// type, secret, times; gnome-keyring-daemon opens the file with `password`.
enum GnomeKeyringExport {
    /// The file is written as a whole (mode 0600) and replaces an existing one only with `replace`.
    /// ThisDeviceOnly items stay behind. Returns the items written and the ThisDeviceOnly items left out.
    /// `screen`: the caller's access control; the file hands every secret to whoever knows the
    /// password the caller chose, so items it is not trusted with are asked about (one question),
    /// hidden ones stay behind.
    static func export(_ keychain: String, from store: KeychainStore, to path: String, password: SecretBytes,
                       replace: Bool, screen: (any ItemAccessScreening)? = nil) throws(KeychainError) -> (items: Int, thisDeviceOnly: Int) {
        guard path.hasPrefix("/") else { throw KeychainError(SecStatus.param, detail: "the export path must be absolute") }
        guard password.count > 0 else {
            throw KeychainError(SecStatus.param, detail: "a gnome-keyring file needs a password (an empty one makes a plaintext keyring)")
        }
        var info = stat()
        if !replace, lstat(path, &info) == 0 { throw KeychainError(SecStatus.duplicateKeychain, detail: "\(path) exists") }
        var (ids, thisDeviceOnly) = try store.transfer.portableItemIDs(in: keychain)
        if let screen {
            ids = try store.freeformItems.screened(ids, in: keychain, by: screen) { id throws(KeychainError) in
                try store.secretServiceItem(id, in: keychain).label
            }
        }
        guard ids.count <= KeyringLimits.maximumItems else {
            throw KeychainError(SecStatus.param, detail: "more than \(KeyringLimits.maximumItems) items")
        }
        var items: [GnomeKeyringWriter.Item] = []
        items.reserveCapacity(ids.count)
        // Secrets in chunks: one read transaction each, never the whole keychain's plaintext at once in Data.
        for start in stride(from: 0, to: ids.count, by: 256) {
            let part = Array(ids[start..<min(ids.count, start + 256)])
            let secrets = try store.secretServiceSecrets(part, in: keychain)
            defer { for value in secrets.values { SecretWipe.wipe(value.value) } }
            for id in part {
                guard let secret = secrets[id] else { continue }
                let item = try store.secretServiceItem(id, in: keychain)
                let bytes = secret.value.withUnsafeBytes { SecretBytes(copying: $0) }
                items.append(GnomeKeyringWriter.Item(
                    id: UInt32(items.count + 1), label: item.label, attributes: item.attributes, schema: item.type, secret: bytes,
                    created: Int64(item.created.timeIntervalSince1970), modified: Int64(item.modified.timeIntervalSince1970)))
            }
        }
        let now = Int64(Date().timeIntervalSince1970)
        let label = keychain == KeywellNames.loginKeychain ? "Login" : keychain
        let file = GnomeKeyringWriter.write(label: label, created: now, modified: now, items: items, password: password)
        try AtomicFile.write(Data(file), to: path)
        return (items.count, thisDeviceOnly)
    }
}
