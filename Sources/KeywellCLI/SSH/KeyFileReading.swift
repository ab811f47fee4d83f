import FoundationEssentials
import KeywellSSHWire
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// Reads an OpenSSH private key file for `keywell ssh-add`. A file with a passphrase is
/// decrypted by OpenSSH's own `ssh-keygen -p` on a private copy, which asks the passphrase
/// exactly as ssh-add does (the terminal; SSH_ASKPASS when SSH_ASKPASS_REQUIRE or a display
/// says so): no bcrypt_pbkdf of our own, and the passphrase never passes through Keywell
/// (docs/ssh.md, "keywell ssh-add").
enum KeyFileReading {
    /// The unencrypted openssh-key-v1 binary of `path`; the caller wipes it.
    static func binary(of path: String) throws(SSHAddError) -> SecretBytes {
        let file = try readKey(path)
        defer { file.wipe() }
        var binary: [UInt8]
        do { binary = try file.withArray { bytes throws(AgentParseError) in try OpenSSHKeyFile.binary(bytes) } } catch {
            throw SSHAddError("\(path): \(error.reason)")
        }
        let secret = SecretBytes(wiping: &binary)
        let cipher: String
        do { cipher = try secret.withArray { bytes throws(AgentParseError) in try OpenSSHKeyFile.cipher(of: bytes) } } catch {
            throw SSHAddError("\(path): \(error.reason)")
        }
        guard cipher != "none" else { return secret }
        secret.wipe()
        return try decrypted(path)
    }

    /// The certificate blob of an OpenSSH public certificate file (`TYPE BASE64 [COMMENT]`, as
    /// `ssh-keygen -s` writes it); nil when there is no such file. At most
    /// `OpenSSHKeyFile.maximumFileBytes` are read.
    static func certificate(at path: String) throws(SSHAddError) -> [UInt8]? {
        guard access(path, F_OK) == 0 else { return nil }
        guard let file = try read(path) else {
            throw SSHAddError("\(path): larger than \(OpenSSHKeyFile.maximumFileBytes) bytes")
        }
        defer { file.wipe() }
        let fields = file.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.split(whereSeparator: { $0 == " " || $0 == "\t" || $0.isNewline })
        guard fields.count >= 2, fields[0].hasSuffix(SSHCertificate.typeSuffix), let blob = Base64.decode(String(fields[1])) else {
            throw SSHAddError("\(path): not an OpenSSH certificate")
        }
        return blob
    }

    /// The file's bytes, or nil when it is larger than `OpenSSHKeyFile.maximumFileBytes` (each
    /// caller says so in its own words); no more than one byte past the cap is ever read.
    private static func read(_ path: String) throws(SSHAddError) -> SecretBytes? {
        let read: [UInt8]?
        do {
            let file = try FileDescriptor.open(path, O_RDONLY)
            read = try file.closeAfter { () throws(Errno) in try file.readAll(limit: OpenSSHKeyFile.maximumFileBytes) }
        } catch {
            throw SSHAddError("\(path): \(error.description)")
        }
        guard var bytes = read else { return nil }
        return SecretBytes(wiping: &bytes)
    }

    /// `read`, for a key: one over the cap is refused as `OpenSSHKeyFile` refuses it.
    private static func readKey(_ path: String) throws(SSHAddError) -> SecretBytes {
        guard let file = try read(path) else {
            throw SSHAddError("\(path): the file is larger than \(OpenSSHKeyFile.maximumFileBytes) bytes")
        }
        return file
    }

    /// A copy in a folder only this user can enter (in the runtime folder, a tmpfs, when there
    /// is one), decrypted in place by `ssh-keygen -p -N ""`, read and overwritten.
    private static func decrypted(_ path: String) throws(SSHAddError) -> SecretBytes {
        let base = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/keywell-ssh-add.XXXXXX").utf8CString)
        guard let folderPointer = mkdtemp(&template) else { throw SSHAddError("cannot make a private folder in \(base)") }
        let folder = String(cString: folderPointer)
        let copy = folder + "/key"
        defer {
            overwrite(copy)
            unlink(copy)
            rmdir(folder)
        }
        let original = try readKey(path)
        defer { original.wipe() }
        guard let copyFile = try? FileDescriptor.open(copy, O_WRONLY | O_CREAT | O_EXCL, permissions: 0o600),
              copyFile.closeAfter({ (try? original.withUnsafeBytes { bytes throws(Errno) in try copyFile.writeAll(bytes) }) != nil })
        else { throw SSHAddError("cannot write a private copy of \(path)") }
        StandardStreams.output.flush()
        let exit: ChildExit?
        do {
            let child = try ChildSpawner.spawn(SpawnRequest(
                executable: "ssh-keygen", arguments: ["-q", "-p", "-N", "", "-f", copy],
                environment: ProcessInfo.processInfo.environment, standardInput: .inherit,
                standardOutput: .inherit, standardError: .inherit))
            exit = ChildSpawner.waitForExit(child.pid)
        } catch {
            throw SSHAddError("cannot run ssh-keygen to decrypt \(path): \(error)")
        }
        guard exit?.succeeded == true else { throw SSHAddError("\(path): ssh-keygen could not decrypt it (wrong passphrase?)") }
        let plain = try readKey(copy)
        defer { plain.wipe() }
        do {
            var binary = try plain.withArray { bytes throws(AgentParseError) in try OpenSSHKeyFile.binary(bytes) }
            return SecretBytes(wiping: &binary)
        } catch { throw SSHAddError("\(path): \(error.reason)") }
    }

    /// Zeroes a file's bytes before it is unlinked.
    private static func overwrite(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        guard let file = try? FileDescriptor.open(path, O_WRONLY) else { return }
        file.closeAfter {
            try? file.writeAll(repeatElement(0, count: Int(status.st_size)))
            try? file.sync()
        }
    }
}
