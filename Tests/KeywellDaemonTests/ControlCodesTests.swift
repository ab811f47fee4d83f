import CKeywellControl
import Foundation
import KeywellCore
import KeywellProtocol
import Testing

@testable import KeywellDaemon

/// The control codes both sides take from pam/keywell-control.h, against what docs/control-protocol.md
/// fixes on the wire and against the daemon's other definitions they must agree with.
@Suite struct ControlCodesTests {
    /// The statuses the module tells apart are the daemon's OSStatus values, defined in SecStatus.
    @Test func statusesAreTheDaemonsOSStatusValues() {
        #expect(OSStatus(KW_STATUS_OK) == SecStatus.success)
        #expect(OSStatus(KW_STATUS_AUTH_FAILED) == SecStatus.authFailed)
    }

    /// The socket lives in the daemon's runtime folder, whose name KeywellPaths gives.
    @Test func socketFolderIsTheDaemonsRuntimeFolder() throws {
        let paths = try KeywellPaths.fromEnvironment(["XDG_RUNTIME_DIR": "/run/user/4242", "HOME": "/home/someone"])
        #expect(paths.runtimeDirectory.path == "/run/user/4242/" + KW_CONTROL_FOLDER)
        #expect(RuntimeFolder(path: paths.runtimeDirectory.path).controlSocketPath == "/run/user/4242/keywell/control")
    }

    /// The letters and sizes of the documented frame (§2 and its example).
    @Test func operationsDecodeFromTheDocumentedLetters() {
        #expect(ControlProtocol.magic == [0x4B, 0x57, 0x43, 0x31])
        #expect(ControlProtocol.Operation(rawValue: 0x4F) == .openSession)
        #expect(ControlProtocol.Operation(rawValue: 0x43) == .closeSession)
        #expect(ControlProtocol.Operation(rawValue: 0x50) == .changePassword)
        #expect(ControlProtocol.Operation(rawValue: 0x51) == .ping)
        #expect(ControlProtocol.Operation(rawValue: 0x54) == .openSessionWithTPM)
        #expect(ControlProtocol.Operation(rawValue: 0x45) == .enableLoginUnlock)
        #expect(ControlProtocol.Operation(rawValue: 0x44) == .disableLoginUnlock)
        #expect(ControlProtocol.Operation(rawValue: 0x52) == nil)
        #expect(ControlProtocol.Operation.allCases.map(\.rawValue) == Array("OCPQTED".utf8))
        #expect(ControlProtocol.Operation.allCases.filter(\.rootOnly) == [.openSessionWithTPM, .enableLoginUnlock])
        #expect(KW_LOGIN_UNLOCK_VALUE_LENGTH == 32)
        #expect(ControlProtocol.maximumFieldLength == 8192)
        #expect(KW_REQUEST_HEAD_LENGTH == 6 && KW_RESPONSE_HEAD_LENGTH == 12)
    }

    @Test func responseFrameMatchesTheDocumentedExample() {
        #expect(ControlProtocol.response(status: 0, message: "") == [0x4B, 0x57, 0x43, 0x31, 0, 0, 0, 0, 0, 0, 0, 0])
        let long = ControlProtocol.response(status: SecStatus.authFailed, message: String(repeating: "x", count: 5000))
        #expect(long.count == Int(KW_RESPONSE_HEAD_LENGTH) + 4096)
        #expect(Array(long[4..<8]) == [0xFF, 0xFF, 0x9D, 0x33])  // -25293 as a big-endian i32
    }
}
