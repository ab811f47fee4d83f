import Foundation
import KeywellProtocol
import KeywellSecretService
import Testing

@testable import KeywellCore

/// Files an earlier Keywell wrote (Tests/Fixtures/golden, README.md there): a keychain file, a
/// backup and an export, each opened by this build with every item, attribute, access list and
/// secret checked, so that a change of format that leaves old files behind fails here.
@Suite struct GoldenFileTests {
    static let folder = TestEnvironment.fixtures + "/golden"
    static let password = "golden test password"
    static let passphrase = "golden export passphrase"

    /// A private copy of a golden file.
    static func copy(_ name: String, to path: String) throws { try TestEnvironment.copyFixture(folder + "/" + name, to: path) }

    /// Every item of `keychain` with its attributes, secret, access list and Secret Service
    /// attributes, sorted by label.
    static func items(_ store: KeychainStore, _ keychain: String) throws -> [WireDictionary] {
        var items: [WireDictionary] = []
        for itemClass in ItemClass.allCases {
            items += try store.copyMatching([
                WireKey.class: .string(itemClass.rawValue), WireKey.useKeychain: .string(keychain),
                WireKey.returnAttributes: .bool(true), WireKey.returnData: .bool(true), WireKey.returnAccess: .bool(true),
                WireKey.returnSecretServiceAttributes: .bool(true), WireKey.matchLimit: .string(WireKey.matchLimitAll),
            ])
        }
        return items.sorted { ($0[AttributeKey.label]?.stringValue ?? "") < ($1[AttributeKey.label]?.stringValue ?? "") }
    }

    static func hex(_ text: String) -> WireValue {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return .data(Data(bytes))
    }

    static let keywell = "exe:/work/wt/base/.build/x86_64-unknown-linux-gnu/debug/keywell"
    static let fingerprint = "SHA256:uM2ESXjqNnihkoIKB2z8KAFB16dDZNqs28R+2s4Oft0"

    /// What the golden keychain holds (README.md there), sorted by label, as CopyMatching gives it.
    static let expected: [WireDictionary] = [
        [
            WireKey.class: .string("inet"), "acct": .string("bob"), "srvr": .string("bank.example"), "ptcl": .string("htps"),
            "port": .integer(8443), "path": .string("/login"), "sdmn": .string("Bank Realm"), "atyp": .string("form"),
            "labl": .string("Bank"), "icmt": .string("inet comment"), "agrp": .string(""), "pdmn": .string("ak"),
            "cdat": .integer(1_795_952_528_468), "mdat": .integer(1_795_952_528_468),
            WireKey.valueData: data("bank secret"), WireKey.access: .strings([keywell]), "ssAttributes": .strings([]),
        ],
        [
            WireKey.class: .string("genp"), "acct": .string("alice"), "svce": .string("mail"), "labl": .string("Mail"),
            "icmt": .string("golden comment"), "desc": .string("golden kind"), "crtr": .string("GCrt"), "type": .string("GTyp"),
            "gena": data("golden generic"), "agrp": .string(""), "pdmn": .string("ak"),
            "cdat": .integer(1_795_952_528_296), "mdat": .integer(1_795_952_528_296),
            WireKey.valueData: data("mail secret"), WireKey.access: .strings(["exe:/usr/bin/true", keywell]),
            "ssAttributes": .strings([]),
        ],
        [
            WireKey.class: .string("genp"), "acct": .string(""), "svce": .string("org.example.wifi"), "labl": .string("Wi-Fi home"),
            "agrp": .string("org.freedesktop.secrets/01a2271ccd707235a77c8457c9843178"), "pdmn": .string("ak"),
            "cdat": .integer(1_795_952_528_752), "mdat": .integer(1_795_952_528_752),
            WireKey.valueData: data("wifi secret"), WireKey.access: .string(WireKey.accessAnyApplication),
            "ssAttributes": .strings(["band", "5GHz", "ssid", "home", "xdg:schema", "org.example.wifi"]),
        ],
        [
            WireKey.class: .string("keys"), "acct": .string(fingerprint), "labl": .string("golden key"),
            "agrp": .string("org.freedesktop.secrets/01a2271cccb67641af1ad66252dcc70e"), "pdmn": .string("ak"),
            "cdat": .integer(1_795_952_528_566), "mdat": .integer(1_795_952_528_566),
            WireKey.valueData: hex(
                "0000000b7373682d6564323535313900000020b9e7cafb2c065997dd995d5fcef2d032fd31ba1261702001fe620d50d4fd9a9b"
                    + "00000040e9e9eb466785402781ddb30ea0ee85e6f94d47734cd8a8318d22b7855e480015b9e7cafb2c065997dd995d5f"
                    + "cef2d032fd31ba1261702001fe620d50d4fd9a9b"),
            WireKey.access: .strings(["exe:/usr/bin/ssh", "exe:/usr/bin/ssh-keygen", keywell]),
            "ssAttributes": .strings([
                "fprt", fingerprint, "keywell:ssh-key", "1", "pubk", "AAAAC3NzaC1lZDI1NTE5AAAAILnnyvssBlmX3ZldX87y0DL9MboSYXAgAf5iDVDU/Zqb",
            ]),
            "ssContentType": .string("application/x-ssh-agent-key"),
        ],
        [
            WireKey.class: .string("genp"), "acct": .string("any"), "svce": .string("open"), "labl": .string("open"),
            "agrp": .string(""), "pdmn": .string("ak"), "cdat": .integer(1_795_952_528_375), "mdat": .integer(1_795_952_528_375),
            WireKey.valueData: hex("00ff10e2"), WireKey.access: .string(WireKey.accessAnyApplication), "ssAttributes": .strings([]),
        ],
    ]

    /// The Secret Service's view of its item: label, attributes, secret and content type.
    static func checkSecretServiceItem(_ store: KeychainStore, _ keychain: String) throws {
        let found = try store.secretServiceSearch(["ssid": "home", "band": "5GHz"], in: keychain)
        #expect(found.count == 1)
        let id = try #require(found.first)
        let item = try store.secretServiceItem(id, in: keychain)
        #expect(item.label == "Wi-Fi home")
        #expect(item.attributes == ["xdg:schema": "org.example.wifi", "ssid": "home", "band": "5GHz"])
        #expect(try store.secretServiceSecrets([id], in: keychain)[id]
            == SecretServiceSecret(value: Data("wifi secret".utf8), contentType: "text/plain"))
    }

    @Test func theKeychainFileOpensWithEveryItem() throws {
        let environment = try TestEnvironment()
        let path = environment.path(of: "golden")
        try Self.copy("golden.keychain-db", to: path)
        #expect(try sqlite(path, "SELECT format_version || ',' || enforce_access FROM keychain") == "3,1")
        let store = try environment.makeStore()
        // Locked, it lists its items and their labels.
        #expect(try store.isLocked("golden"))
        let labels = try store.copyMatching([WireKey.class: .string("genp"), WireKey.useKeychain: .string("golden"),
                                             WireKey.returnAttributes: .bool(true), WireKey.matchLimit: .string(WireKey.matchLimitAll)])
            .compactMap { $0[AttributeKey.label]?.stringValue }.sorted()
        #expect(labels == ["Mail", "Wi-Fi home", "open"])
        expectStatus(SecStatus.authFailed) { try store.unlock("golden", password: secret("not the password")) }
        try store.unlock("golden", password: secret(Self.password))
        #expect(try Self.items(store, "golden") == Self.expected)
        try Self.checkSecretServiceItem(store, "golden")
        #expect(try store.info("golden")[KeychainInfoKey.enforceAccess] == .bool(true))
    }

    @Test func theBackupRestoresWithEveryItem() throws {
        let environment = try TestEnvironment()
        let backup = environment.root.path + "/golden.backup"
        try Self.copy("golden.backup", to: backup)
        let store = try environment.makeStore()
        _ = try store.restoreKeychain(from: backup, as: "restored", replacing: false)
        try store.unlock("restored", password: secret(Self.password))
        #expect(try Self.items(store, "restored") == Self.expected)
        try Self.checkSecretServiceItem(store, "restored")
    }

    @Test func theExportImportsWithEveryItem() throws {
        let environment = try TestEnvironment()
        let file = environment.root.path + "/golden.kwexport"
        try Self.copy("golden.kwexport", to: file)
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        let store = try environment.makeStore(with: ["golden"])
        expectStatus(SecStatus.authFailed) { _ = try store.inspectExport(from: fd, passphrase: secret("not the passphrase")) }
        #expect(try store.inspectExport(from: fd, passphrase: secret(Self.passphrase)) == (["golden"], 5))
        #expect(try store.importExport(from: fd, passphrase: secret(Self.passphrase), into: nil, policy: .skip)
            == ImportSummary(added: 5, replaced: 0, skipped: 0))
        // The same attributes (the Secret Service items' ids among them, in their access groups)
        // and secrets; an export carries no access lists, so imported items trust any
        // application (docs/export-import.md).
        let anyApplication = Self.expected.map { $0.merging([WireKey.access: .string(WireKey.accessAnyApplication)]) { $1 } }
        #expect(try Self.items(store, "golden") == anyApplication)
        try Self.checkSecretServiceItem(store, "golden")
    }
}
