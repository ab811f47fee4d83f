import Foundation
import KeywellCore
import KeywellSystem

/// Opens a GPG wallet's OpenPGP message with the user's own `gpg --batch --decrypt`
/// (docs/migration.md, "KWallet's wallet file"): gpg-agent asks its own pinentry for the key's
/// passphrase, so Keywell never sees it. The message goes in through a pipe and the plaintext
/// comes back through one into wiped memory, never onto disk, at most `KeyringLimits.maximumFileSize`
/// bytes.
public struct KWalletGPG: Sendable {
    /// What gpg (and the pinentry its agent starts) needs from our environment: where the keys
    /// are, and the display or terminal to ask on.
    static let passedVariables = [
        "HOME", "GNUPGHOME", "PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
        "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "GPG_TTY",
    ]
    /// How long gpg may take, the person at its pinentry included.
    public static let defaultDeadline: Duration = .seconds(300)
    /// What is kept of gpg's messages for the error.
    static let maximumMessage = 4096

    public let executable: String
    public let environment: [String: String]
    public let deadline: Duration

    public init(executable: String = "gpg", environment: [String: String], deadline: Duration = defaultDeadline) {
        self.executable = executable
        self.environment = environment.filter { Self.passedVariables.contains($0.key) }
            .merging(["PATH": "/usr/local/bin:/usr/bin:/bin"]) { ours, _ in ours }
        self.deadline = deadline
    }

    /// The plaintext of `message`, or `.cannotDecrypt` naming the wallet with gpg's own reason.
    public func decrypt(_ message: UnsafeRawBufferPointer, keyring: String) throws(KeyringReadError) -> SecretBytes {
        let child: SpawnedChild
        do {
            child = try ChildSpawner.spawn(SpawnRequest(
                executable: executable, arguments: ["--batch", "--no-tty", "--quiet", "--decrypt"],
                environment: environment, standardInput: .pipe, standardOutput: .pipe, standardError: .pipe))
        } catch {
            throw .cannotDecrypt(keyring: keyring, reason: "gpg is needed for a GPG wallet: \(error.description)")
        }
        var run = Exchange(input: child.standardInput!, output: child.standardOutput!, errors: child.standardError!)
        let finished = Self.withoutSIGPIPE {
            run.exchange(message, until: monotonicNanoseconds() &+ deadline.saturatingNanoseconds)
        }
        run.closeAll()
        if !finished { kill(child.pid, SIGTERM) }
        let exit = finished ? ChildSpawner.waitForExit(child.pid) : nil
        if !finished { ChildSpawner.reap(child.pid) }
        let said = Self.lastLine(run.messages)
        guard finished else {
            throw .cannotDecrypt(keyring: keyring, reason: "gpg gave no answer within \(deadline)")
        }
        guard !run.overflowed else {
            throw .tooLarge(keyring: keyring, reason: "the decrypted wallet is over \(KeyringLimits.maximumFileSize) bytes")
        }
        guard let exit, exit.succeeded else {
            throw .cannotDecrypt(keyring: keyring, reason: "gpg \(exit?.description ?? "ended")\(said.isEmpty ? "" : ": " + said)")
        }
        return run.plaintext()
    }

    /// A gpg that stops reading early makes our write fail with EPIPE rather than end this
    /// process: SIGPIPE is blocked on this thread meanwhile, and one it raised is taken back.
    static func withoutSIGPIPE<T>(_ body: () -> T) -> T {
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous)
        defer {
            var zero = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&pipeOnly, nil, &zero) == SIGPIPE {}
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        return body()
    }

    /// gpg's last non-empty line, in printable characters.
    static func lastLine(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).last.map(String.init) ?? ""
        return String(line.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }.map(Character.init))
    }
}

/// One gpg run's three pipes, served by one poll loop (so neither side can fill a pipe and wait
/// for the other); the plaintext grows in wiped memory.
private struct Exchange {
    var input: FileDescriptor?
    var output: FileDescriptor?
    var errors: FileDescriptor?
    var messages: [UInt8] = []
    var overflowed = false
    private var buffer = SecretBytes(count: 64 << 10)
    private var used = 0

    init(input: FileDescriptor, output: FileDescriptor, errors: FileDescriptor) {
        self.input = input
        self.output = output
        self.errors = errors
        try? input.setNonBlocking()
    }

    /// True once gpg closed its output; false when the deadline came first.
    mutating func exchange(_ message: UnsafeRawBufferPointer, until deadline: UInt64) -> Bool {
        var sent = 0
        if message.isEmpty { closeInput() }
        while output != nil || errors != nil {
            let now = monotonicNanoseconds()
            guard now < deadline else { return false }
            var fds = [input, output, errors].compactMap { $0 }.map { pollfd(fd: $0.rawValue, events: Int16($0 == input ? POLLOUT : POLLIN), revents: 0) }
            let waitMilliseconds = Int32(min((deadline - now) / 1_000_000, 1000))
            guard (try? FileDescriptor.wait(&fds, milliseconds: waitMilliseconds)) ?? 0 > 0 else { continue }
            for entry in fds where entry.revents != 0 {
                let fd = FileDescriptor(rawValue: entry.fd)
                if fd == input {
                    let rest = UnsafeRawBufferPointer(rebasing: message[sent...])
                    do {
                        sent += try fd.write(rest)
                        if sent == message.count { closeInput() }
                    } catch where error == .wouldBlock {
                    } catch {
                        closeInput()
                    }
                } else if fd == output {
                    if !readOutput(fd) { try? fd.close(); output = nil }
                } else if !readMessages(fd) {
                    try? fd.close()
                    errors = nil
                }
            }
        }
        return true
    }

    /// False at end of file (or when over the cap, which stops the reading).
    private mutating func readOutput(_ fd: FileDescriptor) -> Bool {
        if used == buffer.count {
            guard buffer.count < KeyringLimits.maximumFileSize else {
                overflowed = true
                return false
            }
            let bigger = SecretBytes(count: min(buffer.count * 2, KeyringLimits.maximumFileSize))
            bigger.withUnsafeMutableBytes { target in buffer.withUnsafeBytes { target.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<used])) } }
            buffer = bigger
        }
        let count = buffer.withUnsafeMutableBytes { free in
            Result { () throws(Errno) in try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: free[used...])) }
        }
        switch count {
        case .success(let count):
            used += count
            return count > 0
        case .failure(let error): return error == .wouldBlock
        }
    }

    private mutating func readMessages(_ fd: FileDescriptor) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 1024)
        let read = chunk.withUnsafeMutableBytes { buffer in Result { () throws(Errno) in try fd.read(into: buffer) } }
        guard case .success(let count) = read else { return read == .failure(.wouldBlock) }
        messages = Array((messages + chunk[0..<count]).suffix(KWalletGPG.maximumMessage))
        return count > 0
    }

    private mutating func closeInput() {
        try? input?.close()
        input = nil
    }

    mutating func closeAll() {
        closeInput()
        for fd in [output, errors].compactMap({ $0 }) { try? fd.close() }
        output = nil
        errors = nil
    }

    /// The plaintext, copied into wiped memory of its own size.
    func plaintext() -> SecretBytes {
        let exact = SecretBytes(count: used)
        exact.withUnsafeMutableBytes { target in buffer.withUnsafeBytes { target.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<used])) } }
        return exact
    }
}
