import Foundation
import KeywellProtocol
import KeywellSecretService
import Testing

@testable import KeywellCore

/// Export and import through the engine, real files and descriptors (docs/export-import.md).
@Suite struct ExportImportTests {
    /// A new file in the environment, opened read-write.
    static func newFile(_ environment: TestEnvironment, _ name: String) throws -> Int32 {
        let fd = open(environment.root.path + "/" + name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestFailure("open \(name) failed") }
        return fd
    }

    /// Every item of every keychain, as the native API and the Secret Service show them. Only
    /// "no such item" means none; any other error (a locked or missing keychain) is thrown, so a
    /// check that a keychain is empty cannot pass on a keychain it could not read.
    static func contents(_ store: KeychainStore, _ keychains: [String]) throws -> [String] {
        var lines: [String] = []
        for keychain in keychains {
            for itemClass in ["genp", "inet"] {
                let query: WireDictionary = [
                    WireKey.class: .string(itemClass), WireKey.useKeychain: .string(keychain),
                    WireKey.returnAttributes: .bool(true), WireKey.returnData: .bool(true),
                    WireKey.returnSecretServiceAttributes: .bool(true), WireKey.matchLimit: .string(WireKey.matchLimitAll),
                ]
                let found: [WireDictionary]
                switch Result(catching: { () throws(KeychainError) in try store.copyMatching(query) }) {
                case .success(let items): found = items
                case .failure(let error) where error.status == SecStatus.itemNotFound: found = []
                case .failure(let error): throw error
                }
                lines += found.map { "\(keychain) \($0.sorted { $0.key < $1.key })" }
            }
        }
        return lines
    }

    static func fill(_ store: KeychainStore) throws {
        _ = try store.add(genp("alice", "mail", ["u_Keychain": .string("login"), "v_Data": .data(Data("s1".utf8)), "icmt": .string("note")]))
        _ = try store.add(inet("bob", "example.com", ["u_Keychain": .string("work"), "v_Data": .data(Data("s2".utf8)),
                                                       "port": .integer(8443), "path": .string("/x")]))
        _ = try store.secretServiceCreateItem(
            in: "work", label: "Wi-Fi", attributes: ["xdg:schema": "org.example.wifi", "ssid": "home"], type: "org.example.Type",
            secret: SecretServiceSecret(value: Data("s3".utf8), contentType: "application/octet-stream"), replace: false)
    }

    @Test func anExportImportedIntoAnEmptyAccountIsIdentical() throws {
        let source = try TestEnvironment()
        let store = try source.makeStore(with: ["login", "work"])
        try Self.fill(store)
        let fd = try Self.newFile(source, "export")
        defer { close(fd) }
        #expect(try store.exportKeychains(["login", "work"], to: fd, passphrase: secret("pass")).items == 3)

        let target = try TestEnvironment()
        let other = try target.makeStore(with: ["login", "work"])
        #expect(try other.inspectExport(from: fd, passphrase: secret("pass")) == (["login", "work"], 3))
        #expect(try other.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .skip)
                == ImportSummary(added: 3, replaced: 0, skipped: 0))
        let exported = try Self.contents(store, ["login", "work"])
        #expect(exported.count == 3)
        #expect(try Self.contents(other, ["login", "work"]) == exported)
        // The Secret Service finds the item by its attributes, with its type and content type.
        let ids = try other.secretServiceSearch(["ssid": "home"], in: "work")
        #expect(ids.count == 1)
        #expect(try other.secretServiceItem(ids[0], in: "work").type == "org.example.Type")
        #expect(try other.secretServiceSecrets(ids, in: "work")[ids[0]]
                == SecretServiceSecret(value: Data("s3".utf8), contentType: "application/octet-stream"))
    }

    @Test func secretServiceItemsWithTheSameAttributesAllComeAcross() throws {
        let source = try TestEnvironment()
        let store = try source.makeStore(with: ["login"])
        for value in ["one", "two"] {
            _ = try store.secretServiceCreateItem(
                in: "login", label: value, attributes: ["service": "same"], type: nil,
                secret: SecretServiceSecret(value: Data(value.utf8), contentType: "text/plain"), replace: false)
        }
        let fd = try Self.newFile(source, "export")
        defer { close(fd) }
        _ = try store.exportKeychains(["login"], to: fd, passphrase: secret("pass"))
        let target = try TestEnvironment()
        let other = try target.makeStore(with: ["login"])
        #expect(try other.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .skip)
                == ImportSummary(added: 2, replaced: 0, skipped: 0))
        #expect(try other.secretServiceSearch(["service": "same"], in: "login").count == 2)
        // Imported again, each meets itself (by id): nothing doubles.
        #expect(try other.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .skip)
                == ImportSummary(added: 0, replaced: 0, skipped: 2))
    }

    @Test func conflictPolicies() throws {
        let source = try TestEnvironment()
        let store = try source.makeStore(with: ["login", "work"])
        try Self.fill(store)
        let fd = try Self.newFile(source, "export")
        defer { close(fd) }
        _ = try store.exportKeychains(["login", "work"], to: fd, passphrase: secret("pass"))
        // The same items changed after the export: older than theirs, newer than the file's.
        try store.update(genp("alice", "mail"), ["v_Data": .data(Data("changed".utf8))])
        func secretOfAlice() throws -> Data? {
            try store.copyMatching(genp("alice", "mail", ["r_Data": .bool(true)])).first?["v_Data"]?.dataValue
        }
        #expect(try store.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .skip)
                == ImportSummary(added: 0, replaced: 0, skipped: 3))
        #expect(try store.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .newer)
                == ImportSummary(added: 0, replaced: 0, skipped: 3))
        #expect(try secretOfAlice() == Data("changed".utf8))
        #expect(try store.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .replace)
                == ImportSummary(added: 0, replaced: 3, skipped: 0))
        #expect(try secretOfAlice() == Data("s1".utf8))
        // Into one keychain: login gets work's items too.
        #expect(try store.importExport(from: fd, passphrase: secret("pass"), into: "login", policy: .skip)
                == ImportSummary(added: 2, replaced: 0, skipped: 1))
    }

    @Test func newerReplacesOnlyWithALaterModification() throws {
        let source = try TestEnvironment()
        let store = try source.makeStore(with: ["login"])
        _ = try store.add(genp("alice", "mail", ["v_Data": .data(Data("first".utf8))]))
        let first = try Self.newFile(source, "first")
        defer { close(first) }
        _ = try store.exportKeychains(["login"], to: first, passphrase: secret("pass"))
        // mdat has millisecond resolution: make sure the change lands on a later one.
        let before = try store.copyMatching(genp("alice", "mail", ["r_Attributes": .bool(true)]))[0]["mdat"]?.integerValue ?? 0
        repeat {
            try store.update(genp("alice", "mail"), ["v_Data": .data(Data("second".utf8))])
        } while try store.copyMatching(genp("alice", "mail", ["r_Attributes": .bool(true)]))[0]["mdat"]?.integerValue ?? 0 <= before
        let second = try Self.newFile(source, "second")
        defer { close(second) }
        _ = try store.exportKeychains(["login"], to: second, passphrase: secret("pass"))

        let target = try TestEnvironment()
        let other = try target.makeStore(with: ["login"])
        _ = try other.importExport(from: first, passphrase: secret("pass"), into: nil, policy: .skip)
        #expect(try other.importExport(from: second, passphrase: secret("pass"), into: nil, policy: .newer)
                == ImportSummary(added: 0, replaced: 1, skipped: 0))
        #expect(try other.importExport(from: first, passphrase: secret("pass"), into: nil, policy: .newer)
                == ImportSummary(added: 0, replaced: 0, skipped: 1))
        #expect(try other.copyMatching(genp("alice", "mail", ["r_Data": .bool(true)]))[0]["v_Data"]?.dataValue == Data("second".utf8))
    }

    @Test func aFileOverTheItemCapIsRefused() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let fd = try Self.newFile(environment, "huge")
        defer { close(fd) }
        var writer = try ExportFile.Writer(passphrase: secret("pass"), kdf: .fastForTests)
        var bytes = writer.header + writer.seal(ExportRecord.keychain("login"))
        for index in 0...ExportLimits.itemsPerFile {
            bytes += writer.seal(ExportRecord.item(ExportedItem(
                keychain: "login", itemClass: .genericPassword, uuid: UUID(), attributes: [.account: .text("\(index)")],
                freeform: [:], secret: Data())))
        }
        bytes += writer.seal(ExportRecord.end(itemCount: ExportLimits.itemsPerFile + 1), final: true)
        #expect(write(fd, bytes, bytes.count) == bytes.count)
        expectStatus(SecStatus.dataTooLarge) { _ = try store.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .skip) }
        #expect(try store.info("login")[KeychainInfoKey.itemCount]?.integerValue == 0)
    }

    @Test func aDamagedFileOrWrongPassphraseImportsNothing() throws {
        let source = try TestEnvironment()
        let store = try source.makeStore(with: ["login", "work"])
        try Self.fill(store)
        let fd = try Self.newFile(source, "export")
        defer { close(fd) }
        _ = try store.exportKeychains(["login", "work"], to: fd, passphrase: secret("pass"))
        let bytes = try ExportInput.readAll(fd)
        let target = try TestEnvironment()
        let other = try target.makeStore(with: ["login", "work"])
        expectStatus(SecStatus.authFailed) { _ = try other.importExport(from: fd, passphrase: secret("wrong"), into: nil, policy: .skip) }
        for (name, altered) in [("cut", Array(bytes.dropLast(1))), ("flipped", bytes.enumerated().map { $0.offset == bytes.count - 5 ? $0.element ^ 1 : $0.element })] {
            let damaged = try Self.newFile(target, name)
            defer { close(damaged) }
            #expect(write(damaged, altered, altered.count) == altered.count)
            expectStatus(SecStatus.decode, "\(name)") { _ = try other.importExport(from: damaged, passphrase: secret("pass"), into: nil, policy: .skip) }
        }
        #expect(try Self.contents(other, ["login", "work"]).isEmpty)
    }

    @Test func lockedOrMissingKeychainsAreRefusedBeforeWriting() throws {
        let source = try TestEnvironment()
        let store = try source.makeStore(with: ["login", "work"])
        try Self.fill(store)
        try store.lock("work")
        let fd = try Self.newFile(source, "export")
        defer { close(fd) }
        expectStatus(SecStatus.interactionNotAllowed) { _ = try store.exportKeychains(["login", "work"], to: fd, passphrase: secret("pass")) }
        expectStatus(SecStatus.noSuchKeychain) { _ = try store.exportKeychains(["nope"], to: fd, passphrase: secret("pass")) }
        #expect(lseek(fd, 0, SEEK_END) == 0)
        try store.unlock("work", password: secret("pw"))
        _ = try store.exportKeychains(["login", "work"], to: fd, passphrase: secret("pass"))
        // Importing into a locked keychain imports nothing either.
        let target = try TestEnvironment()
        let other = try target.makeStore(with: ["login", "work"])
        try other.lock("work")
        expectStatus(SecStatus.interactionNotAllowed) { _ = try other.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .skip) }
        // A keychain that is not there is an error, not an empty keychain.
        expectStatus(SecStatus.noSuchKeychain) { _ = try Self.contents(other, ["nope"]) }
        try other.unlock("work", password: secret("pw"))
        #expect(try Self.contents(other, ["login", "work"]).isEmpty)
    }

    @Test func onlyRegularFilesAreRead() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        expectStatus(SecStatus.param) { _ = try store.inspectExport(from: pipeEnds[0], passphrase: secret("pass")) }
    }
}
