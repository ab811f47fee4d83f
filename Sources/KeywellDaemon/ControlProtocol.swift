import CKeywellControl
import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// The `KWC1` framing of docs/control-protocol.md §2, over a connected socket with timeouts set.
/// Codes and sizes come from the header the PAM module includes (pam/keywell-control.h).
enum ControlProtocol {
    static let magic: [UInt8] = Array(KW_CONTROL_MAGIC.utf8)
    static let maximumFieldLength = Int(KW_MAX_FIELD)
    static let maximumMessageLength = Int(KW_MAX_RESPONSE_MESSAGE)
    /// The socket's name inside the daemon's runtime folder.
    static let socketName = KW_CONTROL_SOCKET

    enum Operation: CaseIterable, RawRepresentable {
        case openSession
        case closeSession
        case changePassword
        case ping
        /// The login unlock through the TPM (docs/login-unlock.md).
        case openSessionWithTPM
        case enableLoginUnlock
        case disableLoginUnlock

        /// The op's letter on the wire.
        var rawValue: UInt8 {
            switch self {
            case .openSession: UInt8(KW_OP_OPEN_SESSION)
            case .closeSession: UInt8(KW_OP_CLOSE_SESSION)
            case .changePassword: UInt8(KW_OP_CHANGE_PASSWORD)
            case .ping: UInt8(KW_OP_PING)
            case .openSessionWithTPM: UInt8(KW_OP_OPEN_SESSION_TPM)
            case .enableLoginUnlock: UInt8(KW_OP_LOGIN_UNLOCK_ENABLE)
            case .disableLoginUnlock: UInt8(KW_OP_LOGIN_UNLOCK_DISABLE)
            }
        }

        init?(rawValue: UInt8) {
            guard let operation = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
            self = operation
        }

        /// Field counts each op takes.
        var acceptedFieldCounts: ClosedRange<Int> {
            switch self {
            case .openSession: 0...1
            case .closeSession, .ping, .disableLoginUnlock: 0...0
            case .changePassword: 2...2
            case .openSessionWithTPM: 1...1
            case .enableLoginUnlock: 3...4
            }
        }

        /// Ops only root (the login process, or `keywell login-unlock` run by root) may send:
        /// they carry the authorization value that the user's own processes must never hold.
        var rootOnly: Bool {
            switch self {
            case .openSessionWithTPM, .enableLoginUnlock: true
            default: false
            }
        }
    }

    struct Request {
        var operation: Operation
        /// Passwords: in locked memory from the moment they leave the socket.
        var fields: [SecretBytes]
    }

    /// A request that cannot be served, with the status to answer.
    struct Rejection: Error {
        var status: OSStatus
        var message: String
    }

    /// Reads one request. Throws `Rejection` for a malformed one (answer it) and `CancellationError`
    /// when the peer stalled or went away (just close).
    static func readRequest(from socket: FileDescriptor) throws -> Request {
        var head = [UInt8](repeating: 0, count: Int(KW_REQUEST_HEAD_LENGTH))
        try readExactly(socket, into: &head)
        guard Array(head[0..<magic.count]) == magic else { throw Rejection(status: SecStatus.param, message: "bad magic") }
        guard let operation = Operation(rawValue: head[4]) else {
            throw Rejection(status: SecStatus.unimplemented, message: "unknown op 0x\(String(head[4], radix: 16))")
        }
        let count = Int(head[5])
        guard operation.acceptedFieldCounts.contains(count) else {
            throw Rejection(status: SecStatus.param, message: "op \(Character(UnicodeScalar(head[4]))) does not take \(count) fields")
        }
        var fields: [SecretBytes] = []
        for _ in 0..<count {
            var lengthBytes = [UInt8](repeating: 0, count: Int(KW_FIELD_LENGTH_SIZE))
            try readExactly(socket, into: &lengthBytes)
            let length = lengthBytes.reduce(0) { $0 << 8 | Int($1) }
            guard length <= maximumFieldLength else {
                throw Rejection(status: SecStatus.param, message: "field longer than \(maximumFieldLength) bytes")
            }
            fields.append(try readSecret(socket, count: length))
        }
        return Request(operation: operation, fields: fields)
    }

    static func response(status: OSStatus, message: String) -> [UInt8] {
        let text = Array(message.utf8.prefix(maximumMessageLength))
        return magic + bigEndian(UInt32(bitPattern: status)) + bigEndian(UInt32(text.count)) + text
    }

    // MARK: Reading

    private static func readExactly(_ socket: FileDescriptor, into buffer: inout [UInt8]) throws {
        try buffer.withUnsafeMutableBytes { raw in try readExactly(socket, into: raw) }
    }

    /// EOF, a timeout (EAGAIN after SO_RCVTIMEO) or an error: the peer is not worth waiting for.
    private static func readExactly(_ socket: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws {
        guard (try? socket.read(filling: buffer)) == true else { throw CancellationError() }
    }

    /// Reads a password straight into locked memory, which is zeroed when freed if the read fails.
    private static func readSecret(_ socket: FileDescriptor, count: Int) throws -> SecretBytes {
        let secret = SecretBytes(count: count)
        try secret.withUnsafeMutableBytes { buffer in try readExactly(socket, into: buffer) }
        return secret
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
