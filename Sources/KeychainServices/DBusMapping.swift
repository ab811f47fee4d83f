import Foundation
import KeywellDBus
import KeywellProtocol

/// Translation between the native API's wire values and D-Bus values, and from D-Bus failures
/// to OSStatus-carrying `KeychainError`s.
enum DBusMapping {
    // MARK: Wire values → D-Bus

    static func dbusValue(_ value: WireValue) -> DBusValue {
        switch value {
        case .string(let text): return .string(text)
        case .data(let bytes): return .bytes([UInt8](bytes))
        case .bool(let flag): return .bool(flag)
        // `x` holds every value a WireValue integer can; the daemon takes any integer type.
        case .integer(let number): return .int64(number)
        case .strings(let list): return .stringArray(list)
        }
    }

    /// `a{sv}`.
    static func dbusDictionary(_ dictionary: WireDictionary) -> DBusValue {
        .stringVariantDict(dictionary.mapValues(dbusValue))
    }

    /// `a{sv}` whose secret (`v_Data`) bytes are also handed to the caller, who wipes them
    /// once the call is over.
    static func dbusDictionary(_ dictionary: WireDictionary, secrets: inout [[UInt8]]) -> DBusValue {
        var values = dictionary.mapValues(dbusValue)
        if case .data(let secret)? = dictionary[WireKey.valueData] {
            let bytes = [UInt8](secret)
            secrets.append(bytes)
            values[WireKey.valueData] = .bytes(bytes)
        }
        return .stringVariantDict(values)
    }

    // MARK: D-Bus → wire values

    /// Any D-Bus value the native API can send back; nil for types it never uses.
    static func wireValue(_ value: DBusValue) -> WireValue? {
        let value = value.unwrappingVariants
        switch value {
        case .string(let text), .objectPath(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .bytes: return value.bytesValue.map { .data(Data($0)) }
        case .array(let element, _) where element == .byte: return value.bytesValue.map { .data(Data($0)) }
        case .array(let element, _) where element == .string: return value.stringArrayValue.map(WireValue.strings)
        default:
            // Integers of any width (the daemon may pick `u`, `x`, `t`, …).
            return value.integerValue.map(WireValue.integer)
        }
    }

    /// `a{sv}` as a wire dictionary; throws when the reply has another shape.
    static func wireDictionary(_ value: DBusValue?, in method: NativeMethod) throws(KeychainError) -> WireDictionary {
        guard let dictionary = value?.asStringVariantDict() else { throw unexpectedReply(method, value) }
        var result: WireDictionary = [:]
        result.reserveCapacity(dictionary.count)
        for (key, entry) in dictionary {
            guard let converted = wireValue(entry) else { throw unexpectedReply(method, entry, key: key) }
            result[key] = converted
        }
        return result
    }

    static func unexpectedReply(_ method: NativeMethod, _ value: DBusValue?, key: String? = nil) -> KeychainError {
        let place = key.map { "\(method.name) reply key \($0)" } ?? "\(method.name) reply"
        let shape = value.map { "type \($0.signature.rawValue)" } ?? "no value"
        return KeychainError(SecStatus.io, detail: "unexpected \(place): \(shape)")
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
    static func keychainError(_ error: DBusError) -> KeychainError {
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
