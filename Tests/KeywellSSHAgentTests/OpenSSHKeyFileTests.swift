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

    /// `keywell ssh-add`'s certificate beside a key file: sent in the certificate's agent
    /// encoding, which the agent reads back as that certificate with that key.
    @Test(arguments: ["ed25519", "ecdsa", "rsa"])
    func aCertificateWithItsKeyIsWhatTheAgentReads(type: String) throws {
        let (file, folder) = try keyFile(type)
        defer { folder.remove() }
        let authority = folder.subpath("authority")
        let made = try ChildProcess.run("ssh-keygen", arguments: ["-q", "-t", "ed25519", "-N", "", "-f", authority])
        #expect(made.termination.succeeded, "\(made)")
        let certified = try ChildProcess.run(
            "ssh-keygen", arguments: ["-q", "-s", authority, "-I", "tester", "-n", "tester", "-V", "20300101:20300201", folder.subpath("key.pub")])
        #expect(certified.termination.succeeded, "\(certified)")
        let text = try String(contentsOfFile: folder.subpath("key-cert.pub"), encoding: .utf8)
        let blob = try #require(Base64.decode(String(text.split(separator: " ")[1])))
        let certificate = try SSHCertificate(blob)
        // 2030-02-01 00:00:00 in the local time zone ssh-keygen read it in: a day's slack either way.
        #expect(abs(Int64(certificate.validBefore) - 1_896_134_400) <= 86_400)
        #expect(!certificate.hasExpired(at: 1_896_134_400 - 2 * 86_400))
        #expect(certificate.hasExpired(at: 1_896_134_400 + 2 * 86_400))

        let keys = try OpenSSHKeyFile.keys(of: try OpenSSHKeyFile.binary(file))
        let encoding = try certificate.agentEncoding(blob, key: keys[0].agentEncoding)
        var message = SSHWireWriter()
        message.byte(AgentMessage.addIdentity.rawValue)
        message.bytes(encoding)
        message.text(keys[0].comment)
        guard case .add(let pair, _) = try AgentRequest.parse(message.bytes) else {
            Issue.record("not read as an add")
            return
        }
        #expect(pair.publicBlob == blob)
        #expect(pair.keyBlob == certificate.keyBlob)
        #expect(try SSHKeyPair.publicParts(of: pair.privateKey).publicBlob == certificate.keyBlob)
        // The key of another type is refused before anything is sent.
        let (other, otherFolder) = try keyFile(type == "ed25519" ? "ecdsa" : "ed25519")
        defer { otherFolder.remove() }
        let otherKeys = try OpenSSHKeyFile.keys(of: try OpenSSHKeyFile.binary(other))
        #expect(throws: AgentParseError.self) { try certificate.agentEncoding(blob, key: otherKeys[0].agentEncoding) }
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
