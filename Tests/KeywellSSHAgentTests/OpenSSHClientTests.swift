import Foundation
import KeywellSSHAgent
import KeywellSSHWire
import KeywellSystem
import KeywellTestSupport
import Logging
import Testing

/// The agent served on a socket, driven by OpenSSH's own `ssh-add` and `ssh-keygen`: what
/// they send is parsed, and what the agent signs, `ssh-keygen -Y verify` accepts.
@Suite(.serialized) final class OpenSSHClientTests {
    let folder: TemporaryDirectory
    let socketPath: String
    let listener: UnixSocketListener
    let store = MemoryKeyStore()

    init() throws {
        folder = try TemporaryDirectory(prefix: "keywell-agent")
        socketPath = folder.subpath("agent")
        listener = try UnixSocketListener(path: socketPath)
        let service = AgentService(store: store, logger: Logger(label: "test"))
        listener.start(
            acceptThreadName: "test-agent", connectionThreadName: "test-agent-conn", maximumConnections: 8,
            UnixSocketListener.Handlers(
                admit: { _ in true }, busy: { _ in },
                serve: { connection in AgentConnection.serve(connection, service: service, caller: "test") },
                failed: { _ in }))
    }

    deinit {
        listener.removeSocketFile()
        folder.remove()
    }

    private var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SSH_AUTH_SOCK"] = socketPath
        environment.removeValue(forKey: "SSH_ASKPASS")
        environment["DISPLAY"] = nil
        return environment
    }

    @discardableResult
    private func run(_ program: String, _ arguments: [String], input: [UInt8]? = nil) throws -> ChildProcess.Output {
        try ChildProcess.run(program, arguments: arguments, environment: environment, standardInput: input, timeout: .seconds(60))
    }

    private func makeKey(_ type: String, bits: String? = nil, name: String? = nil) throws -> String {
        let path = folder.subpath(name ?? "id_\(type)\(bits ?? "")")
        var arguments = ["-q", "-t", type, "-N", "", "-C", "\(type) test", "-f", path]
        if let bits { arguments += ["-b", bits] }
        let output = try run("ssh-keygen", arguments)
        #expect(output.termination.succeeded, "\(output)")
        return path
    }

    @Test func keysOfEveryTypeAreAddedAndTheirSignaturesVerify() throws {
        let keys = [try makeKey("ed25519"), try makeKey("ecdsa", bits: "256"), try makeKey("ecdsa", bits: "384"),
                    try makeKey("ecdsa", bits: "521"), try makeKey("rsa", bits: "2048")]
        for key in keys {
            let added = try run("ssh-add", [key])
            #expect(added.termination.succeeded, "\(added)")
        }
        let listed = try run("ssh-add", ["-l"])
        #expect(listed.standardOutputText.split(separator: "\n").count == keys.count, "\(listed)")
        let message = Array("a message to sign\n".utf8)
        let data = try folder.write(message, to: "message")
        for key in keys {
            let signed = try run("ssh-keygen", ["-Y", "sign", "-n", "file", "-f", key + ".pub", data])
            #expect(signed.termination.succeeded, "\(key): \(signed)")
            let publicKey = try String(contentsOfFile: key + ".pub", encoding: .utf8)
            let signers = try folder.write("tester " + publicKey, to: "allowed")
            let verified = try run("ssh-keygen", ["-Y", "verify", "-n", "file", "-f", signers, "-I", "tester", "-s", data + ".sig"],
                                   input: message)
            #expect(verified.termination.succeeded, "\(key): \(verified)")
            try FileManager.default.removeItem(atPath: data + ".sig")
        }
        #expect(try run("ssh-add", ["-d", keys[0] + ".pub"]).termination.succeeded)
        #expect(store.count == keys.count - 1)
        #expect(try run("ssh-add", ["-D"]).termination.succeeded)
        #expect(store.count == 0)
    }

    @Test func certificatesOfEveryKeyTypeAreAddedWithTheirKeys() throws {
        let authority = try makeKey("ed25519", name: "authority")
        let keys = [try makeKey("ed25519"), try makeKey("ecdsa", bits: "521"), try makeKey("rsa", bits: "2048")]
        for key in keys {
            let certified = try run("ssh-keygen", ["-q", "-s", authority, "-I", "tester", "-n", "tester", key + ".pub"])
            #expect(certified.termination.succeeded, "\(certified)")
            let added = try run("ssh-add", [key])
            #expect(added.standardErrorText.contains("Certificate added"), "\(added)")
        }
        let listed = try run("ssh-add", ["-l"]).standardOutputText
        #expect(listed.components(separatedBy: "-CERT)").count - 1 == keys.count, "\(listed)")
        #expect(store.count == 2 * keys.count)
    }

    @Test func constrainedKeysStayInMemoryAndExpire() throws {
        let key = try makeKey("ed25519")
        #expect(try run("ssh-add", ["-t", "1", key]).termination.succeeded)
        #expect(store.count == 0)
        #expect(try run("ssh-add", ["-l"]).termination.succeeded)
        Thread.sleep(forTimeInterval: 1.5)
        #expect(try run("ssh-add", ["-l"]).termination.exitCode == 1)
    }

    @Test func oversizedAndTruncatedFramesEndInFailureAndTheAgentLives() throws {
        for frame: [UInt8] in [[0, 4, 0, 1, 11], [0, 0, 0, 0], [0, 0, 0, 3, 17, 0, 0]] {
            let reply = try exchange(frame, closeAfterWrite: frame == [0, 0, 0, 3, 17, 0, 0])
            #expect(reply == [0, 0, 0, 1, AgentMessage.failure.rawValue])
        }
        let listed = try run("ssh-add", ["-l"])
        #expect(listed.termination.exitCode == 1, "\(listed)")
    }

    /// Sends raw bytes and reads one reply frame.
    private func exchange(_ bytes: [UInt8], closeAfterWrite: Bool) throws -> [UInt8] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(socketPath.utf8))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(connected == 0)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var reply = [UInt8](repeating: 0, count: 64)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let count = recv(fd, &reply, reply.count, 0)
        return count > 0 ? Array(reply[..<count]) : []
    }
}
