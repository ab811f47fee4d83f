import Foundation
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellCore
@testable import KeywellSecretService

/// The kept list of collections follows the keychains folder and the settings at the next call,
/// whoever changed them and without the engine telling: SearchItems and `Collections` read it.
@Suite struct CollectionDirectoryTests {
    let folder: TemporaryDirectory
    let store: KeychainStore
    let directory: CollectionDirectory

    init() throws {
        (folder, store) = try makeLoginKeychainStore(prefix: "kwss-directory")
        directory = CollectionDirectory(store: store)
    }

    private var keychains: String { folder.url.appendingPathComponent("keychains").path }

    private func keychainIDs() -> [CollectionID] {
        directory.allIDs().filter { $0 != .session }
    }

    @Test func keychainsMadeOrRemovedBehindItsBackShowAtTheNextCall() throws {
        #expect(keychainIDs() == [.keychain("login")])
        _ = try store.createKeychain("zz", password: SecretBytes(copying: Array("pw".utf8)))
        #expect(keychainIDs() == [.keychain("login"), .keychain("zz")])

        // A file dropped into the folder by another program, then taken away again.
        #expect(FileManager.default.createFile(atPath: keychains + "/other.keychain-db", contents: Data(),
                                               attributes: [.posixPermissions: 0o600]))
        #expect(keychainIDs() == [.keychain("login"), .keychain("other"), .keychain("zz")])
        try FileManager.default.removeItem(atPath: keychains + "/other.keychain-db")
        #expect(keychainIDs() == [.keychain("login"), .keychain("zz")])

        try FileManager.default.removeItem(atPath: keychains + "/zz.keychain-db")
        #expect(keychainIDs() == [.keychain("login")])
        #expect(directory.allIDs().last == .session)
    }

    @Test func aNewDefaultKeychainComesFirstAtTheNextCall() throws {
        _ = try store.createKeychain("aa", password: SecretBytes(copying: Array("pw".utf8)))
        try store.setDefaultKeychain("login")
        #expect(keychainIDs() == [.keychain("login"), .keychain("aa")])
        try store.setDefaultKeychain("aa")
        #expect(keychainIDs() == [.keychain("aa"), .keychain("login")])
    }

    @Test func listChangesAreToldOnce() throws {
        directory.noteCurrentList()
        _ = try store.createKeychain("new", password: SecretBytes(copying: Array("pw".utf8)))
        var changes: [CollectionDirectory.ListChange] = []
        directory.listChanged { changes.append($0) }
        directory.listChanged { changes.append($0) }
        #expect(changes.count == 1)
        #expect(changes.first?.created == [.keychain("new")])
    }
}
