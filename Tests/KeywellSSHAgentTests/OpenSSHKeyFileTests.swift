import Foundation
import KeywellCore
import KeywellSSHAgent
import KeywellSSHWire
import KeywellTestSupport
import Testing

/// OpenSSH's private key files as `keywell ssh-add` reads them.
struct OpenSSHKeyFileTests {
    private func keyFile(_ type: String, passphrase: String = "") throws -> (file: [UInt8], folder: TemporaryDirectory) {
        let folder = try TemporaryDirectory(prefix: "keywell-keyfile")
        let path = folder.subpath("key")
        let made = try ChildProcess.run("ssh-keygen", arguments: ["-q", "-t", type, "-N", passphrase, "-C", "a comment", "-f", path])
        #expect(made.termination.succeeded, "\(made)")
        return (Array(try Data(contentsOf: URL(fileURLWithPath: path))), folder)
    }

    @Test(arguments: ["ed25519", "ecdsa", "rsa"])
    func aFileGivesTheKeyTheAgentAccepts(type: String) throws {
        let (file, folder) = try keyFile(type)
        defer { folder.remove() }
        let binary = try OpenSSHKeyFile.binary(file)
        #expect(try OpenSSHKeyFile.cipher(of: binary) == "none")
        let keys = try OpenSSHKeyFile.keys(of: binary)
        #expect(keys.count == 1)
        #expect(keys[0].comment == "a comment")
        let secret = SecretBytes(copying: keys[0].agentEncoding)
        _ = try SSHKeyPair.publicParts(of: secret)
    }

    @Test func anEncryptedFileSaysSoAndGivesNoKeys() throws {
        let (file, folder) = try keyFile("ed25519", passphrase: "pass phrase")
        defer { folder.remove() }
        let binary = try OpenSSHKeyFile.binary(file)
        #expect(try OpenSSHKeyFile.cipher(of: binary) == "aes256-ctr")
        #expect(throws: AgentParseError.self) { try OpenSSHKeyFile.keys(of: binary) }
    }

    @Test func damagedFilesAreRefused() throws {
        let (file, folder) = try keyFile("ed25519")
        defer { folder.remove() }
        let binary = try OpenSSHKeyFile.binary(file)
        for length in stride(from: 0, to: binary.count, by: 7) {
            #expect(throws: AgentParseError.self) { try OpenSSHKeyFile.keys(of: Array(binary[..<length])) }
        }
        #expect(throws: AgentParseError.self) { try OpenSSHKeyFile.binary(Array("hello\n".utf8)) }
        #expect(throws: AgentParseError.self) { try OpenSSHKeyFile.binary(file.map { $0 == UInt8(ascii: "A") ? UInt8(ascii: "!") : $0 }) }
    }
}
