import KeywellDBus

/// What a call to an object that does not exist (any more) answers: UnknownMethod, whatever the
/// method, Properties included — gnome-keyring's answer (GDBus has no object there), which
/// clients read as "not found" (SecretStorage's ItemNotFoundException, libsecret's fallback to
/// CreateCollection). docs/secret-service.md, "Conformance with gnome-keyring".
enum MissingObject {
    /// `error` as the caller of `path` gets it. On every path but the service's, NoSuchObject can
    /// only be about the called object itself (a missing session named in the arguments is
    /// NoSession); on the service's it is about an argument (`SetAlias`'s collection) and stays.
    static func answer(_ error: DBusError, calling path: String, _ object: SecretObject?) -> DBusError {
        guard error.name == SecretServiceNames.errorNoSuchObject, object != .service else { return error }
        // An alias that names nothing keeps its message: it says what to do, and libsecret
        // prints it when its fallback to CreateCollection did not help (FirstStoreAdvice).
        if case .collection(.alias)? = object { return .unknownMethod(error.message) }
        if case .item(.alias, _)? = object { return .unknownMethod(error.message) }
        return .unknownMethod("No such object \(path)")
    }
}
