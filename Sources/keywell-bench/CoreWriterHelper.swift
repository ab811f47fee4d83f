import ArgumentParser
import Foundation
import KeywellCore
import KeywellProtocol

/// For KeywellCoreTests' multi-process tests (not a benchmark): unlocks a keychain with the
/// password on the first line of stdin, then adds items one at a time and prints `ack N` as soon
/// as each add has returned, i.e. is acknowledged.
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

    func run() throws {
        let password = SecretBytes(copying: Array((readLine() ?? "").utf8))
        let paths = KeywellPaths(
            keychainsDirectory: URL(fileURLWithPath: keychainsDirectory),
            configDirectory: URL(fileURLWithPath: configDirectory),
            runtimeDirectory: URL(fileURLWithPath: NSTemporaryDirectory()))
        let store = try KeychainStore(paths: paths, kdf: .fastForTests)
        try store.unlock(keychain, password: password)
        for index in 0..<count {
            _ = try store.add([
                WireKey.class: .string(WireKey.classGenericPassword),
                "acct": .string("\(prefix)-\(index)"),
                "svce": .string("core-writer"),
                WireKey.valueData: .data(Data("secret \(prefix)-\(index)".utf8)),
                WireKey.useKeychain: .string(keychain),
            ])
            // Unbuffered, so the test sees each acknowledgement the moment it happens.
            FileHandle.standardOutput.write(Data("ack \(index)\n".utf8))
        }
    }
}
