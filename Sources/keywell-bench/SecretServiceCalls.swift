import Foundation
import KeywellDBus
import KeywellProtocol
import SecretServiceCrypto

/// The few Secret Service calls the load test makes, over raw D-Bus, with a
/// `dh-ietf1024-sha256-aes128-cbc-pkcs7` session as libsecret opens: secrets travel encrypted.
struct SecretServiceClient {
    static let service = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"

    let connection: DBusConnection
    let session: ClientDHSession

    /// Opens a DH session on `connection`.
    init(_ connection: DBusConnection) throws {
        self.connection = connection
        let exchange = try DHKeyExchange()
        let reply = try connection.call(destination: KeywellNames.secretsBusName, path: KeywellNames.secretsObjectPath,
                                        interface: Self.service, member: SecretServiceProtocol.Member.openSession,
                                        arguments: [.string(DHKeyExchange.algorithm), .variant(.bytes(exchange.publicKey))])
        guard reply.count == 2, let path = reply[1].objectPathValue, let serverKey = reply[0].variantValue?.bytesValue else {
            throw BenchmarkFailure("OpenSession: odd reply \(reply)")
        }
        session = ClientDHSession(path: path, cipher: AESCBCCipher(key: try exchange.deriveKey(peerPublicKey: serverKey)))
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
                                        interface: Self.collectionInterface, member: SecretServiceProtocol.Member.createItem,
                                        arguments: [.stringVariantDict(properties), try session.encode(secret), .bool(replace)])
        guard let item = reply.first?.objectPathValue, item != "/" else { throw BenchmarkFailure("CreateItem asked for a prompt") }
        return item
    }

    /// SearchItems on the service: the unlocked matches.
    func search(_ attributes: [String: String]) throws -> [String] {
        let reply = try connection.call(destination: KeywellNames.secretsBusName, path: KeywellNames.secretsObjectPath,
                                        interface: Self.service, member: SecretServiceProtocol.Member.searchItems,
                                        arguments: [.stringStringDict(attributes)])
        return reply.first?.objectPathArrayValue ?? []
    }

    /// Item.GetSecret: the secret's value bytes, decrypted.
    func secret(of item: String) throws -> [UInt8] {
        let reply = try connection.call(destination: KeywellNames.secretsBusName, path: item, interface: Self.itemInterface,
                                        member: SecretServiceProtocol.Member.getSecret, arguments: [.objectPath(session.path)])
        guard let value = reply.first else { throw BenchmarkFailure("GetSecret: odd reply \(reply)") }
        return try session.decode(value)
    }

    func delete(_ item: String) throws {
        _ = try connection.call(destination: KeywellNames.secretsBusName, path: item, interface: Self.itemInterface,
                                member: SecretServiceProtocol.Member.delete, arguments: [])
    }
}
