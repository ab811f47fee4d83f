import Foundation
import KeywellDBus
import KeywellProtocol

/// One client of the load test: its own connection, its own items (so clients never race on the
/// same item and every answer can be checked), and a fixed mix of writes and reads.
protocol LoadClient {
    /// Makes operation `n`; throws when the daemon answers an error or a wrong secret.
    mutating func operate(_ n: Int) throws
}

/// Native API: Add, CopyMatching (r_Data, checked), Update and Delete of its own items.
struct NativeLoadClient: LoadClient {
    static let service = "load"
    let connection: DBusConnection
    let client: Int
    let keychain: String
    let ledger: AcknowledgedLedger
    private var live: [String] = []
    private var made = 0
    private var random = SystemRandomNumberGenerator()

    init(connection: DBusConnection, client: Int, keychain: String, ledger: AcknowledgedLedger) {
        self.connection = connection
        self.client = client
        self.keychain = keychain
        self.ledger = ledger
    }

    mutating func operate(_ n: Int) throws {
        switch n % 4 {
        case 0, 1:
            made += 1
            let account = "native-\(client)-\(made)"
            let secret = Array("secret \(account) v0".utf8)
            let key = AcknowledgedLedger.Key(face: .native, name: account)
            do {
                _ = try NativeCalls.call(connection, .add, [.stringVariantDict(
                    Self.itemKey(account, keychain).merging([WireKey.valueData: .bytes(secret)]) { $1 })])
            } catch {
                ledger.forget(key)
                throw error
            }
            ledger.acknowledge(key, secret: secret)
            live.append(account)
        case 2:
            guard let account = live.randomElement(using: &random) else { return }
            let expected = ledger.expectation(.init(face: .native, name: account)) ?? nil
            let found = try Self.readSecret(connection, account, keychain)
            if found != expected { throw BenchmarkFailure("CopyMatching \(account): wrong secret") }
        default:
            guard !live.isEmpty else { return }
            let index = Int.random(in: 0..<live.count, using: &random)
            let account = live[index]
            let key = AcknowledgedLedger.Key(face: .native, name: account)
            if n % 8 == 3 {
                let secret = Array("secret \(account) v\(n)".utf8)
                ledger.forget(key)
                _ = try NativeCalls.call(connection, .update, [.stringVariantDict(Self.itemKey(account, keychain)),
                                                                .stringVariantDict([WireKey.valueData: .bytes(secret)])])
                ledger.acknowledge(key, secret: secret)
            } else {
                ledger.forget(key)
                live.remove(at: index)
                _ = try NativeCalls.call(connection, .delete, [.stringVariantDict(Self.itemKey(account, keychain))])
                ledger.acknowledge(key, secret: nil)
            }
        }
    }

    static func itemKey(_ account: String, _ keychain: String) -> [String: DBusValue] {
        [WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(account), AttributeKey.service: .string(service), WireKey.useKeychain: .string(keychain)]
    }

    /// The item's secret, or nil when there is no such item.
    static func readSecret(_ connection: DBusConnection, _ account: String, _ keychain: String) throws -> [UInt8]? {
        do {
            let reply = try NativeCalls.call(connection, .copyMatching, [.stringVariantDict(
                itemKey(account, keychain).merging([WireKey.returnData: true]) { $1 })])
            guard let first = reply.first?.asStringVariantDictArray()?.first, let data = first[WireKey.valueData]?.unwrappingVariants.bytesValue else {
                throw BenchmarkFailure("CopyMatching \(account): no v_Data in the answer")
            }
            return data
        } catch let error as DBusError where error.name.hasSuffix(".ItemNotFound") {
            return nil
        }
    }
}

/// Secret Service: CreateItem, SearchItems + GetSecret (checked), replace and Delete of its own items.
struct SecretServiceLoadClient: LoadClient {
    static let attribute = "kw-load-id"
    let client: Int
    let keychain: String
    let ledger: AcknowledgedLedger
    private let service: SecretServiceClient
    private var live: [String] = []
    private var made = 0
    private var random = SystemRandomNumberGenerator()

    init(connection: DBusConnection, client: Int, keychain: String, ledger: AcknowledgedLedger) throws {
        self.client = client
        self.keychain = keychain
        self.ledger = ledger
        service = try SecretServiceClient(connection)
    }

    mutating func operate(_ n: Int) throws {
        switch n % 4 {
        case 0, 1:
            made += 1
            let id = "ss-\(client)-\(made)"
            try write(id, secret: Array("secret \(id) v0".utf8), replace: false)
            live.append(id)
        case 2:
            guard let id = live.randomElement(using: &random) else { return }
            let expected = ledger.expectation(.init(face: .secretService, name: id)) ?? nil
            if try Self.readSecret(service, id) != expected { throw BenchmarkFailure("GetSecret \(id): wrong secret") }
        default:
            guard !live.isEmpty else { return }
            let index = Int.random(in: 0..<live.count, using: &random)
            let id = live[index]
            if n % 8 == 3 {
                try write(id, secret: Array("secret \(id) v\(n)".utf8), replace: true)
            } else {
                let key = AcknowledgedLedger.Key(face: .secretService, name: id)
                ledger.forget(key)
                live.remove(at: index)
                let items = try service.search([Self.attribute: id])
                guard items.count == 1 else { throw BenchmarkFailure("SearchItems \(id): \(items.count) items") }
                try service.delete(items[0])
                ledger.acknowledge(key, secret: nil)
            }
        }
    }

    private func write(_ id: String, secret: [UInt8], replace: Bool) throws {
        let key = AcknowledgedLedger.Key(face: .secretService, name: id)
        ledger.forget(key)
        try service.createItem(in: keychain, label: "load \(id)", attributes: [Self.attribute: id], secret: secret, replace: replace)
        ledger.acknowledge(key, secret: secret)
    }

    /// The secret of the one item with this id, nil when there is none.
    static func readSecret(_ service: SecretServiceClient, _ id: String) throws -> [UInt8]? {
        let items = try service.search([attribute: id])
        guard items.count <= 1 else { throw BenchmarkFailure("SearchItems \(id): \(items.count) items") }
        return try items.first.map { try service.secret(of: $0) }
    }
}
