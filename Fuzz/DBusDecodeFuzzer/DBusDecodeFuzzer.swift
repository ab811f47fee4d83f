import CDBus
import Foundation
import KeywellAPI
import KeywellProtocol

@testable import KeywellDBus

/// Whole D-Bus messages as they come off the wire: libdbus checks the bytes
/// (`dbus_message_demarshal`), then Keywell's decoder turns the body into values and the daemon's
/// conversion turns those into engine dictionaries, as for a native-API call. Every step must
/// either succeed or refuse with its own error type; decoded values must survive re-encoding.

/// Seeds for the corpus, written when KEYWELL_FUZZ_WRITE_SEEDS names a folder: real calls of the
/// native API, so mutations start from messages libdbus accepts.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let folder = ProcessInfo.processInfo.environment["KEYWELL_FUZZ_WRITE_SEEDS"] else { return 0 }
    let calls: [(String, [DBusValue])] = [
        ("Add", [.stringVariantDict(["class": "genp", "acct": "a", "v_Data": .bytes([1, 2, 3])])]),
        ("CopyMatching", [.stringVariantDict(["class": "inet", "port": .uint32(443),
                                              "m_SearchList": .array(elementSignature: .string, ["login", "work"]),
                                              "r_Attributes": true])]),
        ("Update", [.stringVariantDict(["class": "genp"]), .stringVariantDict(["labl": "x"])]),
        ("Unlock", ["login", .bytes(Array("pw".utf8))]),
        ("SetSearchList", [.array(elementSignature: .string, ["login"])]),
        ("Odd", [.structure([.int16(-1), .double(1.5), .objectPath("/a/b"), .variant(.variant(.uint64(7)))])]),
    ]
    for (index, call) in calls.enumerated() {
        guard let message = dbus_message_new_method_call("org.keywell.Keychain", "/org/keywell/Keychain",
                                                          "org.keywell.Keychain1", call.0) else { continue }
        defer { dbus_message_unref(message) }
        try? MessageEncoder.append(call.1, to: message)
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message, &buffer, &length) != 0, let buffer else { continue }
        let bytes = Data(bytes: buffer, count: Int(length))
        dbus_free(buffer)
        try? bytes.write(to: URL(fileURLWithPath: "\(folder)/seed-\(index)-\(call.0)"))
    }
    exit(0)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    // libdbus wants at least a header's worth before it asks how long the message is.
    guard size >= 16 else { return 0 }
    let needed = data.withMemoryRebound(to: CChar.self, capacity: size) { dbus_message_demarshal_bytes_needed($0, Int32(size)) }
    guard needed > 0, Int(needed) <= size else { return 0 }
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let message = data.withMemoryRebound(to: CChar.self, capacity: size) { dbus_message_demarshal($0, Int32(needed), &error) }
    guard let message else { return 0 }
    defer { dbus_message_unref(message) }

    let values: [DBusValue]
    do {
        values = try MessageDecoder.decodeArguments(of: message)
    } catch {
        return 0  // a refusal by the decoder is fine; only a crash is not
    }
    defer { closeDescriptors(in: values) }

    // What the daemon does with the arguments of item and keychain calls.
    for value in values {
        do { _ = try WireCodec.requestDictionary(value, secretData: { Data($0) }) } catch { checkRefusal(error) }
        do { _ = try WireCodec.requestKeychainList(value) } catch { checkRefusal(error) }
    }

    // Whatever decoded must encode again and decode to the same values.
    guard let copy = dbus_message_new_method_call("a.b", "/a", "a.b", "M") else { return 0 }
    defer { dbus_message_unref(copy) }
    do {
        try MessageEncoder.append(values, to: copy)
    } catch {
        return 0  // the encoder checks limits (depth, size) the decoder does not need to
    }
    guard let again = try? MessageDecoder.decodeArguments(of: copy) else { fatalError("re-encoded values do not decode") }
    defer { closeDescriptors(in: again) }
    if String(describing: again) != String(describing: values) {
        fatalError("round trip changed the values:\n\(values)\n\(again)")
    }
    return 0
}

func checkRefusal(_ error: KeychainError) {
    guard error.status == SecStatus.param else { fatalError("a malformed argument gave \(error), not Param") }
}

/// Unix fds in a message are dup'ed by the decoder; close them so long runs do not run out.
func closeDescriptors(in values: [DBusValue]) {
    for value in values {
        switch value {
        case .unixFD(let descriptor): if descriptor >= 0 { close(descriptor) }
        case .array(_, let elements), .structure(let elements): closeDescriptors(in: elements)
        case .dictionary(_, _, let entries): closeDescriptors(in: entries.flatMap { [$0.key, $0.value] })
        case .variant(let inner): closeDescriptors(in: [inner])
        default: break
        }
    }
}
