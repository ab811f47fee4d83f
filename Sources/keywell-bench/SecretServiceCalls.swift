import Foundation
import KeywellDBus
import KeywellProtocol

/// The few Secret Service calls the load test makes, over raw D-Bus, with a `plain` session
/// (the secret travels as is; the bus is private to the user anyway).
struct SecretServiceClient {
    static let service = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"

    let connection: DBusConnection
    let session: String

    /// Opens a plain session on `connection`.
    init(_ connection: DBusConnection) throws {
        self.connection = connection
        let reply = try connection.call(destination: KeywellNames.secretsBusName, path: KeywellNames.secretsObjectPath,
                                        interface: Self.service, member: "OpenSession",
                                        arguments: ["plain", .variant(.string(""))])
        guard reply.count == 2, let path = reply[1].objectPathValue else { throw BenchmarkFailure("OpenSession: odd reply \(reply)") }
        session = path
    }

    static func collectionPath(_ keychain: String) -> String {
        // Plain ASCII names only here (letters and digits map to themselves).
        "\(KeywellNames.secretsObjectPath)/collection/\(keychain)"
    }

    /// CreateItem in `keychain`; `replace` overwrites the item with the same attributes. Returns its path.
    @discardableResult
    func createItem(in keychain: String, label: String, attributes: [String: String], secret: [UInt8], replace: Bool) throws -> String {
        let properties: [String: DBusValue] = [
            "org.freedesktop.Secret.Item.Label": .string(label),
            "org.freedesktop.Secret.Item.Attributes": .stringStringDict(attributes),
        ]
        let reply = try connection.call(destination: KeywellNames.secretsBusName, path: Self.collectionPath(keychain),
                                        interface: Self.collectionInterface, member: "CreateItem",
                                        arguments: [.stringVariantDict(properties), secretStruct(secret), .bool(replace)])
        guard let item = reply.first?.objectPathValue, item != "/" else { throw BenchmarkFailure("CreateItem asked for a prompt") }
        return item
    }

    /// SearchItems on the service: the unlocked matches.
    func search(_ attributes: [String: String]) throws -> [String] {
        let reply = try connection.call(destination: KeywellNames.secretsBusName, path: KeywellNames.secretsObjectPath,
                                        interface: Self.service, member: "SearchItems",
                                        arguments: [.stringStringDict(attributes)])
        return reply.first?.objectPathArrayValue ?? []
    }

    /// Item.GetSecret: the secret's value bytes.
    func secret(of item: String) throws -> [UInt8] {
        let reply = try connection.call(destination: KeywellNames.secretsBusName, path: item, interface: Self.itemInterface,
                                        member: "GetSecret", arguments: [.objectPath(session)])
        guard let fields = reply.first?.structureFields, fields.count == 4, let value = fields[2].bytesValue else {
            throw BenchmarkFailure("GetSecret: odd reply \(reply)")
        }
        return value
    }

    func delete(_ item: String) throws {
        _ = try connection.call(destination: KeywellNames.secretsBusName, path: item, interface: Self.itemInterface,
                                member: "Delete", arguments: [])
    }

    private func secretStruct(_ value: [UInt8]) -> DBusValue {
        .structure([.objectPath(session), .bytes([]), .bytes(value), .string("text/plain")])
    }
}
