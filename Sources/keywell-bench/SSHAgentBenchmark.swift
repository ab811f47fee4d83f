import ArgumentParser
import CSodium
import Foundation
import KeywellSSHAgent
import KeywellSSHWire
import KeywellSystem

/// `keywell-bench ssh-agent`: an Ed25519 signature's round trip through keywelld's agent
/// against OpenSSH's own `ssh-agent`, alternated in one run so that both meet the same machine
/// (docs/ssh.md, "Speed"). The key lives in the keychain for keywelld and in memory for
/// ssh-agent; this program adds it to both itself, so keywelld's key trusts it as its adder.
struct SSHAgentBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh-agent",
        abstract: "An Ed25519 signature through keywelld's SSH agent against OpenSSH's ssh-agent."
    )

    @Option(help: "Signatures timed on each agent, alternated.")
    var signatures = 2000

    @Option(help: "keywelld to run (default: the one next to this program).")
    var keywelld: String?

    /// The issue's target: keywelld's round trip at most this many times ssh-agent's.
    static let targetRatio = 1.5

    func run() throws {
        guard signatures > 0 else { throw ValidationError("--signatures must be positive") }
        let world = try ActivatedDaemonWorld(daemonPath: try locateKeywelld(keywelld))
        defer { withExtendedLifetime(world) {} }
        let setup = try world.connect()
        defer { setup.close() }
        // The first call starts keywelld through activation; the default keychain takes the key.
        let password = Array("ssh bench password".utf8)
        _ = try NativeCalls.call(setup, .createKeychain, [.string("login"), .bytes(password)])
        _ = try NativeCalls.call(setup, .setDefaultKeychain, [.string("login")])
        let keywellSocket = world.runtime + "/keywell/ssh-agent"
        let opensshSocket = world.root + "/openssh-agent"
        let opensshAgent = try Spawn.start("/usr/bin/ssh-agent", ["-D", "-a", opensshSocket], environment: world.environment,
                                           captureOutput: false)
        defer { kill(opensshAgent.pid, SIGTERM) }
        try waitForSocket(keywellSocket)
        try waitForSocket(opensshSocket)

        let key = Self.ed25519Key()
        let keywell = try AgentClient(keywellSocket)
        let openssh = try AgentClient(opensshSocket)
        for client in [keywell, openssh] {
            guard try client.request(key.add) == AgentReply.success else { throw BenchmarkFailure("an agent refused the key") }
        }
        let sign = Self.signRequest(key.publicBlob)
        var samples = (keywell: LatencySamples(), openssh: LatencySamples())
        var fresh = (keywell: LatencySamples(), openssh: LatencySamples())
        // Warm both up (page faults, the keychain's first read, OpenSSL's and libsodium's set-up).
        for _ in 0..<20 { _ = try keywell.request(sign); _ = try openssh.request(sign) }
        for round in 0..<signatures {
            let first = round % 2 == 0
            for which in first ? [0, 1] : [1, 0] {
                let client = which == 0 ? keywell : openssh
                var reply: [UInt8] = []
                let elapsed = try KeywellBenchTiming.measure { reply = try client.request(sign) }
                guard reply.first == AgentMessage.signResponse.rawValue else { throw BenchmarkFailure("no signature: \(reply)") }
                if which == 0 { samples.keywell.append(elapsed) } else { samples.openssh.append(elapsed) }
            }
            // A new connection per signature, as ssh-keygen and each ssh make one: every tenth round.
            if round % 10 == 0 {
                for which in first ? [0, 1] : [1, 0] {
                    let path = which == 0 ? keywellSocket : opensshSocket
                    let elapsed = try KeywellBenchTiming.measure { _ = try AgentClient(path).request(sign) }
                    if which == 0 { fresh.keywell.append(elapsed) } else { fresh.openssh.append(elapsed) }
                }
            }
        }
        let ratio = samples.keywell.percentile(0.5).seconds / samples.openssh.percentile(0.5).seconds
        let freshRatio = fresh.keywell.percentile(0.5).seconds / fresh.openssh.percentile(0.5).seconds
        print("SSH agent, Ed25519 signature round trip: \(ProcessInfo.processInfo.activeProcessorCount) cores, alternated, "
              + "\(signatures) signatures each")
        print("open connection   keywelld p50 / p99 \(samples.keywell.percentilesText) µs   "
              + "ssh-agent \(samples.openssh.percentilesText) µs   ratio \(String(format: "%.2f", ratio))×")
        print("new connection    keywelld p50 / p99 \(fresh.keywell.percentilesText) µs   "
              + "ssh-agent \(fresh.openssh.percentilesText) µs   ratio \(String(format: "%.2f", freshRatio))× "
              + "(\(fresh.keywell.durations.count) each; keywelld names each new peer)")
        let met = ratio <= Self.targetRatio
        print("target: at most \(Self.targetRatio)× ssh-agent on an open connection: \(met ? "met" : "NOT met")")
        if !met { throw ExitCode(1) }
    }

    private func waitForSocket(_ path: String) throws {
        for _ in 0..<400 {
            var status = stat()
            if stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK { return }
            usleep(25_000)
        }
        throw BenchmarkFailure("no agent socket at \(path)")
    }

    /// A fresh Ed25519 key: its add request and public blob.
    private static func ed25519Key() -> (add: [UInt8], publicBlob: [UInt8]) {
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        var secretKey = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        crypto_sign_keypair(&publicKey, &secretKey)
        var add = SSHWireWriter()
        add.byte(AgentMessage.addIdentity.rawValue)
        add.text(SSHKeyType.ed25519.name)
        add.string(publicKey)
        add.string(secretKey)
        add.text("keywell-bench")
        var blob = SSHWireWriter()
        blob.text(SSHKeyType.ed25519.name)
        blob.string(publicKey)
        return (add.bytes, blob.bytes)
    }

    /// A signature request over 64 bytes, about what ssh signs at login.
    private static func signRequest(_ publicBlob: [UInt8]) -> [UInt8] {
        var request = SSHWireWriter()
        request.byte(AgentMessage.signRequest.rawValue)
        request.string(publicBlob)
        request.string([UInt8](repeating: 0x5a, count: 64))
        request.uint32(0)
        return request.bytes
    }
}

/// One connection to an agent: a request frame out, a reply frame in.
private final class AgentClient {
    private let socket: FileDescriptor

    init(_ path: String) throws {
        socket = try FileDescriptor.connectUnixSocket(path)
    }

    deinit { try? socket.close() }

    func request(_ body: [UInt8]) throws -> [UInt8] {
        var frame = SSHWireWriter()
        frame.string(body)
        do { try socket.sendAll(frame.bytes) } catch { throw BenchmarkFailure("the agent went away: \(error)") }
        let header = try receive(4)
        return try receive(Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3]))
    }

    private func receive(_ count: Int) throws -> [UInt8] {
        guard let bytes = try socket.read(exactly: count) else { throw BenchmarkFailure("the agent closed the connection") }
        return bytes
    }
}
