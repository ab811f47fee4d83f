/// `org.freedesktop.DBus.Properties` for exported objects: checks names, access and types
/// against the declarations, then asks the object for values. The call's signature has been
/// checked already (SignatureCheck).
enum PropertiesDispatcher {
    static func handle(_ call: DBusMethodCall, object: any DBusObject, interfaces: [DBusInterface]) {
        call.reply { () throws(DBusError) -> [DBusValue] in
            switch call.member {
            case "Get":
                let (interface, property) = try find(call.arguments[0].stringValue!, call.arguments[1].stringValue!, in: interfaces)
                guard property.access.isReadable else { throw .accessDenied("Property \(interface.name).\(property.name) is write-only") }
                return [.variant(try value(of: property, in: interface, object: object, call: call))]
            case "GetAll":
                let name = call.arguments[0].stringValue!
                // An empty interface name means every interface (the specification allows it).
                let selected = name.isEmpty ? interfaces : interfaces.filter { $0.name == name }
                if selected.isEmpty { throw .unknownInterface("No interface \(name) at \(call.path)") }
                var entries: [DBusDictEntry] = []
                for interface in selected {
                    let all = try object.allProperties(interface: interface.name, at: call.path, call: call)
                    for property in interface.properties where property.access.isReadable {
                        let value: DBusValue
                        if let all {
                            value = try checked(all[property.name], property, interface)
                        } else {
                            value = try self.value(of: property, in: interface, object: object, call: call)
                        }
                        entries.append(DBusDictEntry(key: .string(property.name), value: .variant(value)))
                    }
                }
                return [.dictionary(keySignature: .string, valueSignature: .variant, entries)]
            case "Set":
                let (interface, property) = try find(call.arguments[0].stringValue!, call.arguments[1].stringValue!, in: interfaces)
                guard property.access.isWritable else { throw .propertyReadOnly("Property \(interface.name).\(property.name) is read-only") }
                let newValue = call.arguments[2].variantValue!
                guard newValue.hasType(property.signature) else {
                    throw .invalidArgs("Property \(interface.name).\(property.name) has type \(property.signature.rawValue), got \(newValue.signature.rawValue)")
                }
                try object.setProperty(property.name, interface: interface.name, value: newValue, at: call.path, call: call)
                return []
            default:
                throw MethodDispatcher.unknownMethod(call)
            }
        }
    }

    private static func find(_ interfaceName: String, _ propertyName: String, in interfaces: [DBusInterface]) throws(DBusError) -> (DBusInterface, DBusProperty) {
        let candidates = interfaceName.isEmpty ? interfaces : interfaces.filter { $0.name == interfaceName }
        if candidates.isEmpty { throw .unknownInterface("No interface \(interfaceName)") }
        for interface in candidates {
            if let property = interface.property(named: propertyName) { return (interface, property) }
        }
        throw .unknownProperty("No property \(interfaceName).\(propertyName)")
    }

    /// The object's value, checked against the declared type so a service bug cannot put a
    /// wrongly typed value on the bus.
    private static func value(of property: DBusProperty, in interface: DBusInterface, object: any DBusObject,
                              call: DBusMethodCall) throws(DBusError) -> DBusValue {
        try checked(try object.property(property.name, interface: interface.name, at: call.path, call: call), property, interface)
    }

    private static func checked(_ value: DBusValue?, _ property: DBusProperty, _ interface: DBusInterface) throws(DBusError) -> DBusValue {
        guard let value else { throw .failed("Property \(interface.name).\(property.name) is declared but the service gave no value") }
        guard value.hasType(property.signature) else {
            throw .failed("Property \(interface.name).\(property.name) is declared \(property.signature.rawValue) but the service gave \(value.signature.rawValue)")
        }
        return value
    }
}

extension DBusConnection {
    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for `path`.
    public func emitPropertiesChanged(path: String, interface: String, changed: [String: DBusValue],
                                      invalidated: [String] = []) throws(DBusError) {
        try emitSignal(path: path, interface: StandardInterface.properties, member: "PropertiesChanged",
                       arguments: [.string(interface), .stringVariantDict(changed), .stringArray(invalidated)])
    }
}
