import Foundation
import KeywellProtocol
import KeywellTestSupport

@testable import KeywellCore

/// What the tests of the engine's Secret Service view start from: a keychain store in a fresh
/// temporary folder (fast KDF) holding a "login" keychain with password "pw". The folder is
/// removed when the returned `TemporaryDirectory` goes away, so keep it as long as the store.
func makeLoginKeychainStore(prefix: String) throws -> (directory: TemporaryDirectory, store: KeychainStore) {
    let directory = try TemporaryDirectory(prefix: prefix)
    let store = try KeychainStore(paths: KeywellPaths(
        keychainsDirectory: directory.url.appendingPathComponent("keychains"),
        configDirectory: directory.url.appendingPathComponent("config"),
        runtimeDirectory: directory.url.appendingPathComponent("run")), kdf: .fastForTests)
    _ = try store.createKeychain("login", password: SecretBytes(copying: Array("pw".utf8)))
    return (directory, store)
}
