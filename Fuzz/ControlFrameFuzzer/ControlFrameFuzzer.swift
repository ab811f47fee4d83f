import CKeywellControl
import Glibc
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// The control socket's requests as keywelld reads them (docs/control-protocol.md §2): any
/// process of the user can connect and write. Each input goes through a real socket pair to
/// `ControlProtocol.readRequest`, which gives a request, a `Rejection` (answered with
/// its status) or a `CancellationError` (the peer stopped early), never a crash and never a field
/// over `KW_MAX_FIELD`. A request it gives is exactly the bytes it read: encoded again, it is a
/// prefix of the input. A response built from the input's bytes keeps to the message cap and
/// parses back. ControlProtocol.swift here is a link to keywelld's own source file
/// (Sources/KeywellDaemon), compiled into this target so that it needs only the modules it imports.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    // A socket pair's buffer takes this much before anything is read.
    guard size <= 60_000 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var ends: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { fatalError("socketpair: \(errno)") }
    defer { close(ends[0]) }
    let written = input.withUnsafeBytes { send(ends[1], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard written == size else { fatalError("short write to the socket pair") }
    close(ends[1])

    let expected = model(input)
    do {
        let request = try ControlProtocol.readRequest(from: FileDescriptor(rawValue: ends[0]))
        guard case .request(let length) = expected else { fatalError("read a request the input does not hold (\(expected))") }
        guard request.operation.acceptedFieldCounts.contains(request.fields.count) else { fatalError("a field count the op refuses") }
        var encoded = ControlProtocol.magic + [request.operation.rawValue, UInt8(request.fields.count)]
        for field in request.fields {
            guard field.count <= ControlProtocol.maximumFieldLength else { fatalError("a field over the cap") }
            let count = UInt32(field.count)
            encoded += [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
            encoded += field.withUnsafeBytes { Array($0) }
        }
        guard encoded.count == length, Array(input.prefix(length)) == encoded else { fatalError("the request is not the bytes read") }
    } catch let rejection as ControlProtocol.Rejection {
        guard case .rejected(let status) = expected, rejection.status == status else {
            fatalError("rejected with \(rejection.status): \(rejection.message), expected \(expected)")
        }
    } catch is CancellationError {
        guard case .cutShort = expected else { fatalError("gave up on an input that was whole (\(expected))") }
    } catch {
        fatalError("an undocumented error: \(error)")
    }

    let response = ControlProtocol.response(status: OSStatus(truncatingIfNeeded: size), message: String(decoding: input, as: UTF8.self))
    let length = response[8..<12].reduce(0) { $0 << 8 | Int($1) }
    guard Array(response.prefix(4)) == ControlProtocol.magic, length <= ControlProtocol.maximumMessageLength,
          response.count == Int(KW_RESPONSE_HEAD_LENGTH) + length else { fatalError("a response outside its framing") }
    return 0
}

enum Expected {
    /// A request `length` bytes long.
    case request(length: Int)
    case rejected(OSStatus)
    /// The input ends before the request does.
    case cutShort
}

/// The reference: the framing read from the whole input at once.
func model(_ input: [UInt8]) -> Expected {
    let head = Int(KW_REQUEST_HEAD_LENGTH)
    guard input.count >= head else { return .cutShort }
    guard Array(input[0..<4]) == Array(KW_CONTROL_MAGIC.utf8) else { return .rejected(SecStatus.param) }
    // Which ops exist and the field counts each takes come from the protocol's one table (a
    // second copy here went stale when an op gained a field); the framing is what this checks.
    guard let operation = ControlProtocol.Operation(rawValue: input[4]) else { return .rejected(SecStatus.unimplemented) }
    let fields = operation.acceptedFieldCounts
    guard fields.contains(Int(input[5])) else { return .rejected(SecStatus.param) }
    var offset = head
    for _ in 0..<Int(input[5]) {
        guard input.count - offset >= 4 else { return .cutShort }
        let length = input[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        offset += 4
        guard length <= Int(KW_MAX_FIELD) else { return .rejected(SecStatus.param) }
        guard input.count - offset >= length else { return .cutShort }
        offset += length
    }
    return .request(length: offset)
}
