import CKeywellControl
import KeywellDBus
import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

/// One request to a user's keywelld over its control socket (docs/control-protocol.md), the
/// way the PAM module sends it: the folder and the socket must be the user's, and so must the
/// process listening (`SO_PEERCRED`), before a byte goes out.
struct ControlChannel {
    enum Failure: Error {
        /// No daemon: no socket, or nobody listening.
        case absent(String)
        /// Something there is not the user's: nothing was sent.
        case refused(String)
        /// Sent, but no whole answer came.
        case noAnswer
    }

    struct Answer {
        var status: Int32
        var message: String
    }

    let uid: uid_t
    /// The user's runtime folder: `$XDG_RUNTIME_DIR` for the user's own command, else
    /// `/run/user/<uid>` (root never trusts a folder named by its caller's environment).
    let runtimeFolder: String
    /// Enabling derives a key from the password and talks to the TPM: more than a login's budget.
    var timeoutSeconds = 15

    func send(_ op: Int32, fields: [SecretBytes]) throws(Failure) -> Answer {
        let folder = runtimeFolder + "/" + KW_CONTROL_FOLDER
        let socketPath = folder + "/" + KW_CONTROL_SOCKET
        var info = stat()
        guard lstat(folder, &info) == 0 else { throw .absent("no \(folder)") }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == uid, info.st_mode & 0o077 == 0 else {
            throw .refused("\(folder) is not the user's private folder")
        }
        guard lstat(socketPath, &info) == 0 else { throw .absent("no \(socketPath)") }
        guard info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == uid else { throw .refused("\(socketPath) is not the user's socket") }

        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.connectUnixSocket(socketPath, timeoutSeconds: timeoutSeconds)
        } catch {
            switch error {
            case .pathTooLong: throw .refused("socket path too long")
            case .noSocket: throw .absent("cannot make a socket")
            case .notConnected: throw .absent("nobody listens on \(socketPath)")
            }
        }
        defer { try? descriptor.close() }
        guard let peer = PeerCredentials.of(descriptor, pinning: false), peer.uid == uid else {
            throw .refused("the process on \(socketPath) is not the user's")
        }

        // Any failure from here on (the daemon went away, a timeout) is no answer.
        let request = Self.frame(op, fields)
        guard (try? request.withUnsafeBytes { bytes throws(Errno) in try descriptor.sendAll(bytes) }) != nil,
              let head = try? descriptor.read(exactly: Int(KW_RESPONSE_HEAD_LENGTH)),
              Array(head.prefix(4)) == Array(KW_CONTROL_MAGIC.utf8) else { throw .noAnswer }
        let status = Int32(bitPattern: Self.bigEndian(head[4..<8]))
        let messageLength = min(Int(Self.bigEndian(head[8..<12])), Int(KW_MAX_RESPONSE_MESSAGE))
        let message = messageLength == 0 ? [] : (try? descriptor.read(exactly: messageLength)) ?? []
        return Answer(status: status, message: String(decoding: message, as: UTF8.self))
    }

    /// The request built straight into locked memory: the fields (passwords) are never copied
    /// into an ordinary array.
    private static func frame(_ op: Int32, _ fields: [SecretBytes]) -> SecretBytes {
        var head = Array(KW_CONTROL_MAGIC.utf8) + [UInt8(op), UInt8(fields.count)]
        let request = SecretBytes(count: head.count + fields.reduce(0) { $0 + 4 + $1.count })
        request.withUnsafeMutableBytes { target in
            var offset = 0
            func append(_ source: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: target[offset..<(offset + source.count)]).copyMemory(from: source)
                offset += source.count
            }
            head.withUnsafeBytes { append($0) }
            for field in fields {
                let count = UInt32(field.count)
                head = [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
                head.withUnsafeBytes { append($0) }
                field.withUnsafeBytes { append($0) }
            }
        }
        return request
    }

    private static func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }
}
