import KeywellDBus
import KeywellProtocol

/// Secret Service errors, and the engine's errors as clients expect them.
enum SecretServiceError {
    static func noSuchObject(_ message: String) -> DBusError {
        DBusError(name: SecretServiceNames.errorNoSuchObject, message: message)
    }

    /// A session named in the arguments (`GetSecret(s)`, a secret's first field) that does not
    /// exist or is another connection's.
    static func noSession(_ message: String) -> DBusError {
        DBusError(name: SecretServiceNames.errorNoSession, message: message)
    }

    static func isLocked(_ message: String) -> DBusError {
        DBusError(name: SecretServiceNames.errorIsLocked, message: message)
    }

    static func alreadyExists(_ message: String) -> DBusError {
        DBusError(name: SecretServiceNames.errorAlreadyExists, message: message)
    }

    /// IsLocked for a locked keychain, NoSuchObject for what is not there, AlreadyExists for
    /// duplicates, InvalidArgs for bad input; anything else is Failed with the engine's text.
    static func from(_ error: KeychainError, object: String) -> DBusError {
        switch error.status {
        case SecStatus.interactionNotAllowed: isLocked("\(object) is locked")
        case SecStatus.itemNotFound, SecStatus.noSuchKeychain, SecStatus.noDefaultKeychain:
            noSuchObject("No such object \(object)")
        case SecStatus.duplicateItem, SecStatus.duplicateKeychain: alreadyExists(error.wireMessage)
        case SecStatus.param: .invalidArgs(error.wireMessage)
        case SecStatus.readOnlyAttr, SecStatus.unimplemented: .notSupported(error.wireMessage)
        default: .failed(error.wireMessage)
        }
    }
}

extension KeychainError {
    func secretServiceError(_ object: String) -> DBusError { SecretServiceError.from(self, object: object) }
}
