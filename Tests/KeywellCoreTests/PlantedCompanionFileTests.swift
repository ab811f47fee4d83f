import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

/// The four-file rule (docs/file-format.md): before SQLite touches a keychain, the file and its
/// -wal, -shm and -journal are absent or regular files of the user's, 0600, with one name.
/// Each kind of planted file, at each companion, is refused on create and on open with
/// errSecWrPerm naming it, and nothing is written into it.
@Suite struct PlantedCompanionFileTests {
    enum Plant: String, CaseIterable, CustomTestStringConvertible {
        case symlink, otherOwner, mode0666, hardLink, folder, fifo
        var testDescription: String { rawValue }
    }

    static let suffixes = KeychainFileSet.companionSuffixes

    /// A sticky folder everyone can write, like /tmp, for keychains given by path.
    // @unchecked: immutable after init.
    final class SharedFolder: @unchecked Sendable {
        let path: String
        let environment: TestEnvironment

        init() throws {
            environment = try TestEnvironment()
            path = environment.root.path + "/shared"
            guard mkdir(path, 0o700) == 0, chmod(path, 0o1777) == 0 else { throw TestFailure("cannot make \(path)") }
        }

        func makeStore() throws -> KeychainStore { try environment.makeStore() }
    }

    /// Puts `kind` at `path`; returns the files whose contents must stay empty.
    static func plant(_ kind: Plant, at path: String) throws -> [String] {
        func emptyFile(_ file: String, mode: mode_t) throws {
            let descriptor = open(file, O_CREAT | O_EXCL | O_WRONLY, mode)
            guard descriptor >= 0 else { throw TestFailure("cannot create \(file)") }
            fchmod(descriptor, mode)
            close(descriptor)
        }
        switch kind {
        case .symlink:
            try emptyFile(path + ".target", mode: 0o600)
            guard symlink(path + ".target", path) == 0 else { throw TestFailure("symlink") }
            return [path + ".target"]
        case .otherOwner:
            try emptyFile(path, mode: 0o600)
            guard chown(path, 65534, 65534) == 0 else { throw TestFailure("chown") }
            return [path]
        case .mode0666:
            try emptyFile(path, mode: 0o666)
            return [path]
        case .hardLink:
            try emptyFile(path, mode: 0o600)
            guard link(path, path + ".other-name") == 0 else { throw TestFailure("link") }
            return [path, path + ".other-name"]
        case .folder:
            guard mkdir(path, 0o700) == 0 else { throw TestFailure("mkdir") }
            return []
        case .fifo:
            guard mkfifo(path, 0o600) == 0 else { throw TestFailure("mkfifo") }
            return []
        }
    }

    static func size(_ path: String) -> Int64 {
        var info = stat()
        return lstat(path, &info) == 0 ? Int64(info.st_size) : -1
    }

    static func expectRefused(_ planted: String, untouched: [String], _ body: () throws -> Void) {
        let error = expectStatus(SecStatus.wrPerm, "\(planted)", body)
        #expect(error?.detail?.contains(planted) == true, "\(String(describing: error))")
        for file in untouched { #expect(size(file) == 0, "\(file) was written to") }
    }

    static let runsAsRoot = geteuid() == 0

    @Test(arguments: Plant.allCases, suffixes)
    func aPlantedCompanionStopsACreate(kind: Plant, suffix: String) throws {
        try #require(kind != .otherOwner || Self.runsAsRoot, "giving a file away needs root")
        let folder = try SharedFolder()
        let path = folder.path + "/x.keychain-db"
        let untouched = try Self.plant(kind, at: path + suffix)
        let store = try folder.makeStore()
        Self.expectRefused(path + suffix, untouched: untouched) { _ = try store.createKeychain(path, password: secret("pw")) }
        // No keychain was made, nor any of the other companions left to take.
        #expect(Self.size(path) == -1)
        for other in Self.suffixes where other != suffix {
            #expect(Self.size(path + other) <= 0)
        }
    }

    @Test(arguments: Plant.allCases, suffixes)
    func aPlantedCompanionStopsAnOpen(kind: Plant, suffix: String) throws {
        try #require(kind != .otherOwner || Self.runsAsRoot, "giving a file away needs root")
        let folder = try SharedFolder()
        let path = folder.path + "/x.keychain-db"
        do {
            let store = try folder.makeStore()
            _ = try store.createKeychain(path, password: secret("pw"))
            _ = try store.add(genp("a", "s", [WireKey.valueData: data("kept"), WireKey.useKeychain: .string(path)]))
        }
        // Gone, as when another SQLite program closed the keychain last.
        unlink(path + suffix)
        let untouched = try Self.plant(kind, at: path + suffix)
        let store = try folder.makeStore()
        Self.expectRefused(path + suffix, untouched: untouched) { try store.unlock(path, password: secret("pw")) }
        Self.expectRefused(path + suffix, untouched: untouched) { _ = try store.info(path) }

        // Once the planted file is gone the keychain opens with its item: the refusal lost nothing.
        if kind == .folder { rmdir(path + suffix) } else { unlink(path + suffix) }
        try store.unlock(path, password: secret("pw"))
        let found = try store.copyMatching(genp("a", "s") + returnData + [WireKey.matchSearchList: .strings([path])])
        #expect(found.first?[WireKey.valueData] == data("kept"))
    }

    @Test(arguments: [Plant.symlink, .hardLink, .mode0666])
    func theKeychainFileItselfFollowsTheRule(kind: Plant) throws {
        let folder = try SharedFolder()
        let real = folder.path + "/real.keychain-db"
        _ = try folder.makeStore().createKeychain(real, password: secret("pw"))
        let path = folder.path + "/x.keychain-db"
        switch kind {
        case .symlink: #expect(symlink(real, path) == 0)  // even to the user's own keychain
        case .hardLink: #expect(link(real, path) == 0)
        default:
            #expect(rename(real, path) == 0)
            chmod(path, 0o640)  // readable by the group is enough to refuse it
        }
        let store = try folder.makeStore()
        let error = expectStatus(SecStatus.wrPerm) { try store.unlock(path, password: secret("pw")) }
        #expect(error?.detail?.contains(path) == true)
        if kind == .symlink {
            expectStatus(SecStatus.wrPerm) { _ = try store.createKeychain(path, password: secret("pw")) }
        }
    }

    @Test func allFourFilesAreTheUsersAndOutliveTheConnections() throws {
        let folder = try SharedFolder()
        let path = folder.path + "/x.keychain-db"
        do {
            let store = try folder.makeStore()
            _ = try store.createKeychain(path, password: secret("pw"))
            _ = try store.add(genp("a", "s", [WireKey.useKeychain: .string(path)]))
        }
        // Every connection is closed now; SQLite left -wal and -shm (emptied) for us to keep.
        for suffix in [""] + Self.suffixes {
            var info = stat()
            #expect(lstat(path + suffix, &info) == 0, "\(suffix) is missing")
            #expect(info.st_mode & S_IFMT == S_IFREG && info.st_mode & 0o7777 == 0o600, "\(suffix)")
            #expect(info.st_uid == geteuid() && info.st_nlink == 1, "\(suffix)")
        }
        // Nothing else: the temporary the keychain was built under went with its own companions.
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["x.keychain-db", "x.keychain-db-journal", "x.keychain-db-shm", "x.keychain-db-wal"])
        #expect(Self.size(path + "-wal") == 0)
        #expect(Self.size(path + "-journal") == 0)
        #expect(try sqlite(path, "PRAGMA journal_mode") == "wal")
    }

    @Test func aCompanionSwappedBehindAnOpenKeychainIsNoticed() throws {
        let folder = try SharedFolder()
        let path = folder.path + "/x.keychain-db"
        let store = try folder.makeStore()
        _ = try store.createKeychain(path, password: secret("pw"))
        _ = try store.info(path)
        unlink(path + "-journal")
        let untouched = try Self.plant(.symlink, at: path + "-journal")
        Self.expectRefused(path + "-journal", untouched: untouched) { _ = try store.info(path) }
    }
}
