import KeywellAPI
import KeywellDBus
import KeywellProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The client's side of the native API's values (the mapping itself is `WireCodec`'s), and
/// D-Bus failures as OSStatus-carrying `KeychainError`s.
package enum DBusMapping {
    // MARK: Wire values → D-Bus (WireCodec, plus the secrets this side wipes)

    /// `a{sv}` whose secret (`v_Data`) bytes are also handed to the caller, who wipes them
    /// once the call is over.
    package static func dbusDictionary(_ dictionary: WireDictionary, secrets: inout [[UInt8]]) -> DBusValue {
        let value = WireCodec.dbusDictionary(dictionary)
        if case .bytes(let bytes)? = value.asStringVariantDict()?[WireKey.valueData] { secrets.append(bytes) }
        return value
    }

    // MARK: Errors

    /// Bus-level failures that mean "the keychain service cannot be reached".
    private static let unavailableNames: Set<String> = [
        DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner, DBusError.Name.disconnected,
        DBusError.Name.noReply, DBusError.Name.timeout, DBusError.Name.timedOut,
        "org.freedesktop.DBus.Error.NoServer", "org.freedesktop.DBus.Error.NoNetwork",
        "org.freedesktop.DBus.Error.FileNotFound", "org.freedesktop.DBus.Error.BadAddress",
        "org.freedesktop.DBus.Error.AuthFailed", "org.freedesktop.DBus.Error.Spawn.ChildExited",
    ]

    /// The OSStatus a D-Bus failure stands for: the daemon's own errors carry theirs; an absent
    /// daemon or bus, or a timeout, is errSecNotAvailable; a refused call shape is errSecParam.
    package static func keychainError(_ error: DBusError) -> KeychainError {
        if let native = KeychainError(dbusErrorName: error.name, message: error.message) { return native }
        let detail = error.description
        if unavailableNames.contains(error.name) || error.isTimeout
            || error.name.hasPrefix("org.freedesktop.DBus.Error.Spawn.") {
            return KeychainError(SecStatus.notAvailable, detail: detail)
        }
        switch error.name {
        case DBusError.Name.invalidArgs, DBusError.Name.invalidSignature:
            return KeychainError(SecStatus.param, detail: detail)
        case DBusError.Name.unknownMethod, DBusError.Name.unknownInterface, DBusError.Name.unknownObject:
            return KeychainError(SecStatus.unimplemented, detail: detail)
        case DBusError.Name.noMemory:
            return KeychainError(SecStatus.allocate, detail: detail)
        default:
            return KeychainError(SecStatus.io, detail: detail)
        }
    }
}
