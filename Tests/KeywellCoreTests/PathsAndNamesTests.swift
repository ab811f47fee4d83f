import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite struct PathsAndNamesTests {
    @Test func xdgVariablesChooseTheFolders() throws {
        let paths = try KeywellPaths.fromEnvironment([
            "HOME": "/home/u", "XDG_DATA_HOME": "/d", "XDG_CONFIG_HOME": "/c", "XDG_RUNTIME_DIR": "/r",
        ])
        #expect(paths.keychainsDirectory.path == "/d/keywell/keychains")
        #expect(paths.configDirectory.path == "/c/keywell")
        #expect(paths.runtimeDirectory.path == "/r/keywell")
    }

    @Test func missingOrRelativeXDGVariablesFallBackToHome() throws {
        let paths = try KeywellPaths.fromEnvironment(["HOME": "/home/u", "XDG_DATA_HOME": "relative"])
        #expect(paths.keychainsDirectory.path == "/home/u/.local/share/keywell/keychains")
        #expect(paths.configDirectory.path == "/home/u/.config/keywell")
        #expect(paths.runtimeDirectory.path == "/run/user/\(geteuid())/keywell")
    }

    @Test(arguments: ["", ".hidden", "a/b", "école", "tab\there", "x?", String(repeating: "a", count: 201), "../up"])
    func badNamesAreParamEverywhere(name: String) throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        expectStatus(SecStatus.param) { _ = try store.createKeychain(name, password: secret("pw")) }
        expectStatus(SecStatus.param) { try store.unlock(name, password: secret("pw")) }
        expectStatus(SecStatus.param) { try store.lock(name) }
        expectStatus(SecStatus.param) { _ = try store.info(name) }
        expectStatus(SecStatus.param) { try store.deleteKeychain(name) }
        expectStatus(SecStatus.param) { try store.setDefaultKeychain(name) }
        expectStatus(SecStatus.param) { try store.setSearchList(["work", name]) }
        expectStatus(SecStatus.param) { _ = try store.add(genp("a", "s") + [WireKey.useKeychain: .string(name)]) }
        expectStatus(SecStatus.param) {
            _ = try store.copyMatching(genp("a", "s") + [WireKey.matchSearchList: .strings([name])])
        }
    }

    @Test func namesMayUseTheWholeAllowedAlphabet() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let name = "My Keys_2.0-x" + String(repeating: "k", count: 187)
        #expect(name.utf8.count == 200)
        let path = try store.createKeychain(name, password: secret(""))
        #expect(path == environment.path(of: name))
        #expect(try store.listKeychains() == [name])
    }

    @Test func aNameWithTheFileExtensionMeansTheSameKeychain() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        #expect(try store.info("work.keychain-db")[KeychainInfoKey.name] == .string("work"))
    }

    @Test func keychainsOutsideTheFolderAreNamedByPath() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let outside = environment.root.path + "/elsewhere/project.keychain-db"
        try FileManager.default.createDirectory(atPath: environment.root.path + "/elsewhere", withIntermediateDirectories: false)
        #expect(try store.createKeychain(outside, password: secret("pw")) == outside)
        try store.setSearchList([outside, "login"])
        #expect(try store.searchList() == [outside, "login"])
        #expect(try store.listKeychains() == [outside])
        #expect(try store.info(outside + "/../project.keychain-db")[KeychainInfoKey.name] == .string(outside))

        // A path into the keychains folder is the named keychain.
        _ = try store.createKeychain("named", password: secret("pw"))
        #expect(try store.info(environment.path(of: "named"))[KeychainInfoKey.name] == .string("named"))
        try store.setSearchList([environment.path(of: "named")])
        #expect(try store.searchList() == ["named"])
    }

    /// Two folders whose names Swift's String finds equal ("café" composed and decomposed) are two
    /// folders to the kernel, so their keychains are two files: opening one never answers for the
    /// other, and a search list naming both keeps both.
    @Test func pathsSpeltInOtherBytesAreOtherKeychains() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let composedFolder = environment.root.path + "/caf\u{E9}"
        let decomposedFolder = environment.root.path + "/cafe\u{301}"
        #expect(composedFolder == decomposedFolder)  // what a String comparison says
        for folder in [composedFolder, decomposedFolder] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        }
        let composed = composedFolder + "/k.keychain-db"
        let decomposed = decomposedFolder + "/k.keychain-db"
        _ = try store.createKeychain(composed, password: secret("one"))
        _ = try store.add(genp("a", "s", [WireKey.useKeychain: .string(composed), WireKey.valueData: .data(Data("composed".utf8))]))
        // Opened, and so kept in the table of open files, before the other one exists.
        #expect(try store.copyMatching(genp("a", "s", [WireKey.useKeychain: .string(composed), WireKey.returnData: .bool(true)]))
            == [[WireKey.valueData: .data(Data("composed".utf8))]])
        expectStatus(SecStatus.noSuchKeychain) {
            _ = try store.copyMatching(genp("a", "s", [WireKey.useKeychain: .string(decomposed)]))
        }
        _ = try store.createKeychain(decomposed, password: secret("two"))
        expectStatus(SecStatus.itemNotFound) {
            _ = try store.copyMatching(genp("a", "s", [WireKey.useKeychain: .string(decomposed)]))
        }
        _ = try store.add(genp("a", "s", [WireKey.useKeychain: .string(decomposed), WireKey.valueData: .data(Data("decomposed".utf8))]))
        for (path, secret) in [(composed, "composed"), (decomposed, "decomposed")] {
            #expect(try store.copyMatching(genp("a", "s", [WireKey.useKeychain: .string(path), WireKey.returnData: .bool(true)]))
                == [[WireKey.valueData: .data(Data(secret.utf8))]])
        }
        try store.lock(composed)
        #expect(try store.copyMatching(genp("a", "s", [WireKey.useKeychain: .string(decomposed), WireKey.returnData: .bool(true)]))
            == [[WireKey.valueData: .data(Data("decomposed".utf8))]])
        try store.setSearchList([composed, decomposed])
        #expect(try store.searchList().map { Array($0.utf8) } == [Array(composed.utf8), Array(decomposed.utf8)])
    }

    @Test func creatingInAMissingFolderIsRefused() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        expectStatus(SecStatus.param) { _ = try store.createKeychain(environment.root.path + "/nope/x.keychain-db", password: secret("pw")) }
    }
}
