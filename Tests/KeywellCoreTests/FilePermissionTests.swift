import Foundation
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellCore

@Suite struct FilePermissionTests {
    @Test func keychainFilesAndFoldersArePrivate() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("a", "s"))
        let path = environment.path(of: "login")
        #expect(try fileMode(path) == 0o600)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            #expect(try fileMode(path + suffix) == 0o600, "\(suffix)")
        }
        for folder in ["data", "data/keywell", "data/keywell/keychains"] {
            #expect(try fileMode(environment.root.path + "/" + folder) == 0o700, "\(folder)")
        }
    }

    @Test func aFileOthersCanWriteIsRefusedClearly() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let path = environment.path(of: "login")
        chmod(path, 0o666)
        let error = expectStatus(SecStatus.wrPerm) { _ = try store.copyMatching(genp("a", "s")) }
        #expect(error?.detail?.contains(path) == true)
        #expect(error?.detail?.contains("0666") == true)
        let fresh = try environment.makeStore()
        expectStatus(SecStatus.wrPerm) { try fresh.unlock("login", password: secret("pw")) }
        expectStatus(SecStatus.wrPerm) { _ = try fresh.info("login") }
        chmod(path, 0o600)
        try fresh.unlock("login", password: secret("pw"))
    }

    @Test func aFolderOthersCanWriteIsRefusedClearly() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        chmod(environment.keychainsDirectory, 0o777)
        let fresh = try environment.makeStore()
        let error = expectStatus(SecStatus.wrPerm) { try fresh.unlock("login", password: secret("pw")) }
        #expect(error?.detail?.contains(environment.keychainsDirectory) == true)
        expectStatus(SecStatus.wrPerm) { _ = try store.listKeychains() }
        expectStatus(SecStatus.wrPerm) { _ = try store.createKeychain("another", password: secret("pw")) }
        // A file swapped in behind an open store is a new file, checked anew.
        let path = environment.path(of: "login")
        try FileManager.default.copyItem(atPath: path, toPath: path + ".copy")
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(atPath: path + ".copy", toPath: path)
        expectStatus(SecStatus.wrPerm) { _ = try store.info("login") }
        chmod(environment.keychainsDirectory, 0o700)
        #expect(try store.listKeychains() == ["login"])
        #expect(try store.isLocked("login"))

        try FileManager.default.createDirectory(at: environment.paths.configDirectory, withIntermediateDirectories: true)
        chmod(environment.paths.configDirectory.path, 0o757)
        expectStatus(SecStatus.wrPerm) { _ = try environment.makeStore().searchList() }
        expectStatus(SecStatus.wrPerm) { try store.setSearchList(["login"]) }
    }

    @Test(.enabled(if: ContinuousIntegration.runs(if: geteuid() == 0), "needs root to give a file away"))
    func aFileAnotherUserOwnsIsRefused() throws {
        try #require(geteuid() == 0, "giving a file away needs root: CI runs as root")
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let path = environment.path(of: "login")
        chown(path, 65534, 65534)
        let error = expectStatus(SecStatus.wrPerm) { _ = try store.info("login") }
        #expect(error?.detail?.contains("UID 65534") == true)
    }

    @Test func aFileThatIsNotAKeychainIsInvalidAndLeftAlone() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let path = environment.path(of: "notes")
        _ = FileManager.default.createFile(atPath: path, contents: Data("just text".utf8))
        chmod(path, 0o600)
        expectStatus(SecStatus.invalidKeychain) { _ = try store.info("notes") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("just text".utf8))

        let other = environment.path(of: "otherdb")
        try sqlite(other, "CREATE TABLE t (x)")
        chmod(other, 0o600)
        expectStatus(SecStatus.invalidKeychain) { try store.unlock("otherdb", password: secret("pw")) }
        #expect(try sqlite(other, "PRAGMA journal_mode") == "delete")
    }

    @Test func anAtomicFileReplacesWholeAndPrivateLeavingNoTemporary() throws {
        let folder = try TemporaryDirectory(prefix: "keywell-atomic")
        let path = folder.subpath("settings.json")
        try AtomicFile.write(Data("first".utf8), to: path)
        try AtomicFile.write(Data("second, longer".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second, longer")
        #expect(try fileMode(path) == 0o600, "0600, the private file mode")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["settings.json"])
        let missing = folder.subpath("gone/settings.json")
        let error = expectStatus(SecStatus.io) { try AtomicFile.write(Data("x".utf8), to: missing) }
        #expect(error?.detail?.contains("No such file or directory") == true, "the failing call's errno: \(String(describing: error?.detail))")
    }
}
