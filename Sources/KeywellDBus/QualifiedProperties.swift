/// The `a{sv}` of properties some methods take to make an object (the Secret Service's
/// `CreateItem` and `CreateCollection`), keyed by qualified name: `<interface>.<property>`.
///
/// A key naming a property one of `interfaces` declares must hold exactly the declared type,
/// inside the one variant the dictionary gives every value: `Label` is `s`, so a `Label` sent as
/// a variant of a variant of `s` (or of anything else) is refused with InvalidArgs, as
/// `Properties.Set` refuses it. Other keys are left alone (newer clients send properties of
/// newer versions of an interface).
public struct QualifiedProperties: Sendable {
    private let values: [String: DBusValue]

    public init(_ value: DBusValue, declaredBy interfaces: [DBusInterface]) throws(DBusError) {
        guard let values = value.asStringVariantDict() else {
            throw .invalidArgs("Properties are a{sv}, got \(value.signature.rawValue)")
        }
        for (key, value) in values {
            guard let property = Self.declaration(of: key, in: interfaces) else { continue }
            guard value.hasType(property.signature) else {
                throw .invalidArgs("\(key) is \(property.signature.rawValue), got \(value.signature.rawValue)")
            }
        }
        self.values = values
    }

    /// How many entries the dictionary has, declared or not.
    public var count: Int { values.count }

    /// The value given for `key` (a variant's content, of the declared type), if any.
    public subscript(key: String) -> DBusValue? { values[key] }

    private static func declaration(of key: String, in interfaces: [DBusInterface]) -> DBusProperty? {
        guard let dot = key.lastIndex(of: ".") else { return nil }
        let interfaceName = key[..<dot]
        let propertyName = String(key[key.index(after: dot)...])
        return interfaces.first { $0.name == interfaceName }?.property(named: propertyName)
    }
}
