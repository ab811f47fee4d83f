import ArgumentParser
import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// For KeywellCoreTests' multi-process tests (not a benchmark): unlocks a keychain with the
/// password on the first line of stdin, then adds items one at a time and prints `ack N` as soon
/// as each add has returned, i.e. is acknowledged. With `--file-size-limit` it runs under that
/// RLIMIT_FSIZE with SIGXFSZ ignored, so writes past the limit fail with EFBIG the way they fail
/// on a full disk (KeywellCoreTests' mount-free disk-full test); an add that fails prints
/// `refused <status> <detail>` and ends the run with exit status 3.
struct CoreWriterHelper: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "core-writer",
        abstract: "Test helper: adds items one by one, printing each acknowledged one.",
        shouldDisplay: false
    )

    @Option(help: "The keychains folder.") var keychainsDirectory: String
    @Option(help: "The settings folder.") var configDirectory: String
    @Option(help: "The keychain to add to.") var keychain: String
    @Option(help: "Accounts are <prefix>-<n>.") var prefix: String
    @Option(help: "How many items to add.") var count: Int
    @Option(help: "Secrets of this many bytes (byte i of item n is i + n, truncated) instead of short text.")
    var secretBytes: Int?
    @Option(help: "Run with this file size limit (bytes), SIGXFSZ ignored.") var fileSizeLimit: UInt?

    /// The secret of item `index`: the tests compute the same bytes.
    static func secret(prefix: String, index: Int, bytes: Int?) -> Data {
        guard let bytes else { return Data("secret \(prefix)-\(index)".utf8) }
        return Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &+ index) })
    }

    func run() throws {
        if let fileSizeLimit {
            signal(SIGXFSZ, SIG_IGN)
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
            limit.rlim_cur = rlim_t(fileSizeLimit)
            guard setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0 else {
                throw ValidationError("setrlimit(RLIMIT_FSIZE): \(Errno.current.description)")
            }
        }
        let password = SecretBytes(copying: Array((readLine() ?? "").utf8))
        let paths = KeywellPaths(
            keychainsDirectory: URL(fileURLWithPath: keychainsDirectory),
            configDirectory: URL(fileURLWithPath: configDirectory),
            runtimeDirectory: URL(fileURLWithPath: NSTemporaryDirectory()))
        let store = try KeychainStore(paths: paths, kdf: .fastForTests)
        try store.locking.unlock(keychain, password: password)
        for index in 0..<count {
            let item: WireDictionary = [
                WireKey.class: .string(WireKey.classGenericPassword),
                AttributeKey.account: .string("\(prefix)-\(index)"),
                AttributeKey.service: .string("core-writer"),
                WireKey.valueData: .data(Self.secret(prefix: prefix, index: index, bytes: secretBytes)),
                WireKey.useKeychain: .string(keychain),
            ]
            do {
                _ = try store.items.add(item)
            } catch {
                FileHandle.standardOutput.write(Data("refused \(error.status) \(error.detail ?? "")\n".utf8))
                throw ExitCode(3)
            }
            // Unbuffered, so the test sees each acknowledgement the moment it happens.
            FileHandle.standardOutput.write(Data("ack \(index)\n".utf8))
        }
    }
}
