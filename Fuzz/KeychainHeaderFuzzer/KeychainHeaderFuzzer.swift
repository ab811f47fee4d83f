import Foundation
import KeywellProtocol

@testable import KeywellCore

/// Keychain files as found on disk: each input is written as `login.keychain-db` and opened,
/// unlocked and read through KeychainStore. A damaged file must give a KeychainError with a known
/// status; it must never crash and never hand out a secret other than the one stored.
/// The seed corpus is a real keychain holding one item whose secret is `knownSecret`.

let knownSecret = Data("the one secret the seed keychain holds".utf8)
let password = "fuzz password"

/// A private folder on tmpfs when there is one: every input is a file write.
let workFolder: String = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    var template = Array("\(base)/keywell-header-fuzz-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
    return String(cString: made)
}()

let paths = KeywellPaths(
    keychainsDirectory: URL(fileURLWithPath: workFolder + "/keychains"),
    configDirectory: URL(fileURLWithPath: workFolder + "/config"),
    runtimeDirectory: URL(fileURLWithPath: workFolder + "/run"))
let keychainPath = workFolder + "/keychains/login.keychain-db"

func removeKeychainFiles() {
    for suffix in ["", "-wal", "-shm", "-journal"] { unlink(keychainPath + suffix) }
}

/// Makes a real keychain once, which also runs every lazily made global (Swift statics, GRDB's
/// and libsodium's set-up) before libFuzzer starts counting allocations as leaks. With
/// KEYWELL_FUZZ_WRITE_SEEDS naming the corpus folder, writes that keychain as the seed and exits.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    atexit { try? FileManager.default.removeItem(atPath: workFolder) }
    let bytes: Data
    do {
        do {
            let store = try KeychainStore(paths: paths, kdf: .fastForTests)
            _ = try store.registry.createKeychain("login", password: SecretBytes(copying: Array(password.utf8)))
            _ = try store.items.add([
                WireKey.class: .string("genp"), "acct": .string("fuzz"), "svce": .string("header"),
                WireKey.valueData: .data(knownSecret),
            ])
            try store.locking.lock("login")
            try store.locking.unlock("login", password: SecretBytes(copying: Array(password.utf8)))
            _ = try store.items.copyMatching([WireKey.class: .string("genp"), WireKey.returnData: .bool(true), WireKey.returnAttributes: .bool(true)])
            _ = try store.locking.info("login")
        }
        // Fold the WAL into the file so the one file is the whole keychain.
        let database = try KeychainDatabase(opening: keychainPath)
        _ = try database.read { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        bytes = try Data(contentsOf: URL(fileURLWithPath: keychainPath))
    } catch {
        fatalError("making the seed keychain: \(error)")
    }
    // Once through the input path too, so its own one-time set-up happens here.
    _ = bytes.withUnsafeBytes { fuzzOneInput($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) }
    guard let folder = ProcessInfo.processInfo.environment["KEYWELL_FUZZ_WRITE_SEEDS"] else { return 0 }
    do {
        try bytes.write(to: URL(fileURLWithPath: folder + "/seed-keychain"))
    } catch {
        fatalError("writing the seed: \(error)")
    }
    exit(0)
}

func checkRefusal(_ error: any Error) {
    guard let error = error as? KeychainError, SecStatus.name(for: error.status) != nil else {
        fatalError("not a known KeychainError: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    removeKeychainFiles()
    mkdir(workFolder + "/keychains", 0o700)
    let fd = open(keychainPath, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
    guard fd >= 0 else { fatalError("cannot write \(keychainPath)") }
    _ = write(fd, data, size)
    close(fd)
    defer { removeKeychainFiles() }

    do {
        // Argon2id runs with the file's own parameters; a mutated header may ask for up to the
        // engine's cap (4 GiB), more than a fuzzer's memory limit. Such files still go through
        // opening and the locked reads below; only the unlock is skipped.
        let header = try KeychainDatabase(opening: keychainPath).readHeader()
        let cheapToUnlock = header.kdf.memLimit <= 16 << 20 && header.kdf.opsLimit <= 4

        let store = try KeychainStore(paths: paths, kdf: .fastForTests)
        let query: WireDictionary = [
            WireKey.class: .string("genp"), WireKey.matchLimit: .string(WireKey.matchLimitAll),
            WireKey.returnAttributes: .bool(true), WireKey.returnPersistentRef: .bool(true),
        ]
        do { _ = try store.items.copyMatching(query) } catch { checkRefusal(error) }
        _ = try store.locking.info("login")
        guard cheapToUnlock else { return 0 }
        try store.locking.unlock("login", password: SecretBytes(copying: Array(password.utf8)))
        var withData = query
        withData[WireKey.returnData] = .bool(true)
        for item in try store.items.copyMatching(withData) {
            if let secret = item[WireKey.valueData]?.dataValue, secret != knownSecret {
                fatalError("a damaged keychain returned a secret that was never stored: \(secret)")
            }
        }
    } catch {
        checkRefusal(error)
    }
    return 0
}
