import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// gnome-keyring's private interface (`org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface`)
/// on `/org/freedesktop/secrets`: what Seahorse ("Change Password") and other GNOME tools call.
/// Master passwords arrive as secret structs of the caller's session, are opened into wiped
/// memory and go only to the engine; unlocking and changing go through the guessing throttle.
/// Errors are gnome-keyring's (docs/secret-service.md, "gnome-keyring's private interface").
struct GnomeKeyringInternal: GnomeKeyringInternalMethods {
    let context: ServiceContext

    static func handles(_ call: DBusMethodCall) -> Bool {
        if let interface = call.interface { return interface == SecretServiceNames.gnomeKeyringInternalInterface }
        return GnomeKeyringInterfaces.internalInterface.method(named: call.member) != nil
    }

    func createWithMasterPassword(attributes: DBusValue, master: DBusValue, call: CallContext) throws(DBusError) -> String {
        let properties = try PropertyDictionary(attributes, of: SecretServiceInterfaces.collection)
        return try create(properties, password(master, call))
    }

    func changeWithMasterPassword(collection path: String, original: DBusValue, master: DBusValue,
                                  call: CallContext) throws(DBusError) {
        // Both secrets are read before the collection is looked at, as gnome-keyring does.
        let original = try password(original, call)
        let master = try password(master, call)
        let name = try keychain(at: path, "has no password to change")
        try engine("Couldn't change collection password") { () throws(KeychainError) in
            try context.store.locking.changePassword(name, old: original, new: master)
        }
        context.logger.info("changed the password of keychain \"\(name)\" through gnome-keyring's interface")
    }

    func unlockWithMasterPassword(collection path: String, master: DBusValue, call: CallContext) throws(DBusError) {
        let master = try password(master, call)
        guard let name = try keychainOrSession(at: path) else { return }  // `session` is never locked
        try engine("Couldn't unlock collection") { () throws(KeychainError) in
            try context.store.locking.unlock(name, password: master)
        }
        context.keychainUnlocked(name, master)
    }

    func changeWithPrompt(collection path: String, call: CallContext) throws(DBusError) -> String {
        let name = try keychain(at: path, "has no password to change")
        let requester = ServiceContext.describe(call.sender, on: call.connection)
        let context = self.context
        return try context.prompts.create(owner: call.sender, emptyResult: .string("")) { promptContext in
            ChangePasswordPrompt(context: context, requester: requester).run(name, promptContext) ? .string("") : nil
        }
    }

    /// A keychain named after the label (as CreateCollection names them), with no alias, as
    /// gnome-keyring's CreateWithMasterPassword makes it.
    private func create(_ properties: PropertyDictionary, _ master: SecretBytes) throws(DBusError) -> String {
        let label = properties.string(SecretServiceNames.collectionLabelProperty) ?? ""
        guard label.utf8.count <= KeychainStore.Registry.labelMaximumBytes else {
            throw .invalidArgs("A collection label is at most \(KeychainStore.Registry.labelMaximumBytes) bytes")
        }
        let name = KeychainNaming.unusedName(forLabel: label, store: context.store)
        let id = try engine("Couldn't create collection") { () throws(KeychainError) -> CollectionID in
            try KeychainCreation(context: context).make(name: name, label: label, alias: "", password: master)
        }
        return ObjectPaths.path(of: id)
    }

    /// The master password of a secret struct, opened with the caller's session: NoSession for a
    /// session that is not the caller's, InvalidArgs for one that does not decrypt.
    private func password(_ value: DBusValue, _ call: CallContext) throws(DBusError) -> SecretBytes {
        let secret = try SecretEncoding.decode(value, caller: call.sender, sessions: context.sessions)
        defer { SecretWipe.wipe(secret.value) }
        return SecretBytes(copying: secret.value)
    }

    /// The keychain behind a collection path (aliases too); NoSuchObject as gnome-keyring says it.
    private func keychain(at path: String, _ refusal: String) throws(DBusError) -> String {
        guard let name = try keychainOrSession(at: path) else {
            throw .notSupported("The in-memory session collection \(refusal)")
        }
        return name
    }

    /// Nil for the in-memory `session` collection.
    private func keychainOrSession(at path: String) throws(DBusError) -> String? {
        guard case .collection(let address)? = ObjectPaths.parse(path), let collection = context.directory.resolve(address) else {
            throw SecretServiceError.noSuchObject("The collection does not exist")
        }
        guard case .keychain(let name) = collection.id else { return nil }
        return name
    }

    /// Runs an engine call; a wrong password (or one the throttle did not check) is gnome-keyring's
    /// `Denied`, anything else the usual mapping with `failure` as gnome-keyring words it.
    private func engine<T>(_ failure: String, _ body: () throws(KeychainError) -> T) throws(DBusError) -> T {
        do {
            return try body()
        } catch where error.status == SecStatus.authFailed {
            let message = PasswordThrottle.isRefusal(error) ? UnlockPrompt.complaint(about: error) : "The password was invalid"
            throw DBusError(name: SecretServiceNames.errorDenied, message: message)
        } catch where error.status == SecStatus.noSuchKeychain {
            throw SecretServiceError.noSuchObject("The collection does not exist")
        } catch where error.status == SecStatus.duplicateKeychain || error.status == SecStatus.param {
            throw error.secretServiceError(failure)
        } catch {
            context.logger.error("\(failure): \(error.wireMessage)")
            throw .failed(failure)
        }
    }
}
