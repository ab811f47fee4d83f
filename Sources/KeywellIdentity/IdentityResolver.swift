import CProcessPinning
import Foundation
import KeywellDBus
import KeywellSystem

/// Works out a D-Bus caller's `ApplicationIdentity` (docs/access-control.md "How a caller is
/// identified"): the bus's credentials for the connection, the process pinned with a pidfd,
/// the identity read through the pinned `/proc` entry, then a check that the process still lives
/// and the bus still gives the connection the same pid.
public struct IdentityResolver: Sendable {
    /// The user's runtime folder, where Flatpak registers its running instances.
    public let runtimeDirectory: String?
    public let digests: FileDigest
    public let userID: UInt32

    /// Longest command line searched for an interpreter's script.
    public static let maximumCommandLine = 256 * 1024

    public init(runtimeDirectory: String?, digests: FileDigest = FileDigest(), userID: UInt32 = getuid()) {
        self.runtimeDirectory = runtimeDirectory
        self.digests = digests
        self.userID = userID
    }

    public func resolve(_ sender: String, on connection: DBusConnection) throws(IdentityError) -> ApplicationIdentity {
        try resolve(sender, on: connection, asked: nil)
    }

    /// `resolve`, with the bus's credentials already asked for (`asked`, sent before the call
    /// reached this thread) or asked now.
    func resolve(_ sender: String, on connection: DBusConnection,
                 asked: CallerCredentials.Question?) throws(IdentityError) -> ApplicationIdentity {
        let question: CallerCredentials.Question
        if let asked { question = asked } else { question = try CallerCredentials.start(sender, on: connection) }
        let credentials = try question.answer()
        guard credentials.uid == userID else {
            if let fd = credentials.processFD { try? fd.close() }
            throw .otherUser(uid: credentials.uid)
        }
        let pin = try ProcessPin(pid: pid_t(bitPattern: credentials.pid), pidfd: credentials.processFD)
        // The process the bus names must hold a connection to this bus as its own; which of its
        // connections is the caller's only the bus knows (docs/access-control.md, "A connection
        // handed over an exec", says what remains).
        if let bus = connection.socketDescriptor.map(FileDescriptor.init(rawValue:)).flatMap(ConnectionHolding.listenerAddress(ofOwn:)) {
            guard try ConnectionHolding.holds(pin, where: { ConnectionHolding.isConnected($0, toListener: bus) }) else {
                throw .borrowedConnection(pid: pin.pid)
            }
        }
        // The bus still has the connection and it is still that pid's: the pid did not pass to
        // another process between the bus's answer and pidfd_open (unless the connection's
        // socket outlived the process that opened it; see the docs). Asked right after
        // pidfd_open, which is all the check needs, and answered while the identity is read.
        let recheck: ProcessIDQuery
        do { recheck = try connection.startUnixProcessIDQuery(of: sender) } catch { throw .raced }
        let identity = try identify(pin, securityLabel: credentials.securityLabel)
        try pin.checkAlive()
        let again: UInt32
        do { again = try recheck.answer() } catch { throw .raced }
        guard again == credentials.pid else { throw .raced }
        return identity
    }

    /// The identity of a direct-socket caller (`DBusPeerServer`): the kernel pinned the process
    /// that connected (`SO_PEERPIDFD`), so no pid can pass to another process meanwhile and
    /// nothing needs checking again with anyone. Without that pidfd (a kernel before 6.5) the
    /// caller is not identified: the daemon serves no direct socket there.
    /// `socket` is keywelld's end of the connection: the peer must hold the other end as its own.
    public func resolve(peer credentials: PeerCredentials, socket: FileDescriptor) throws(IdentityError) -> ApplicationIdentity {
        guard let pidfd = credentials.processFD.map(FileDescriptor.init(rawValue:)) else {
            throw .process("the kernel gave no pidfd for the socket's peer")
        }
        guard credentials.uid == userID else {
            try? pidfd.close()
            throw .otherUser(uid: credentials.uid)
        }
        let pin = try ProcessPin(pid: credentials.pid, pidfd: pidfd)
        if let peerSocket = ConnectionHolding.peerInode(ofOwn: socket) {
            guard try ConnectionHolding.holds(pin, where: { $0 == peerSocket }) else { throw .borrowedConnection(pid: pin.pid) }
        }
        let identity = try identify(pin, securityLabel: credentials.securityLabel)
        try pin.checkAlive()
        return identity
    }

    /// The identity of a pinned process, in order of strength: a snap's label, a Flatpak
    /// sandbox's app id, else its executable (and script).
    func identify(_ pin: ProcessPin, securityLabel: [UInt8]?) throws(IdentityError) -> ApplicationIdentity {
        if let label = securityLabel, let snap = try SnapLabel.parse(label) {
            return ApplicationIdentity(.snap(label: snap.label, enforced: snap.enforced))
        }
        let root = try pin.open("root", flags: O_RDONLY | O_DIRECTORY)
        defer { try? root.close() }
        if let flatpak = try FlatpakSandbox.info(root: root, runtimeDirectory: runtimeDirectory) {
            return ApplicationIdentity(.flatpak(appID: flatpak.appID))
        }
        let executable = try pin.open("exe", flags: O_RDONLY)
        defer { try? executable.close() }
        let path = try ProcessPin.path(of: executable)
        // A program only root can replace is named by its path: it is not hashed at all.
        let sha256 = RootOnlyProgram.isRootOnly(executable, path: path) ? nil : try digests.sha256(of: executable)
        var script: ApplicationIdentity.Script?
        if let interpreter = InterpreterCommandLine.interpreter(forExecutable: path) {
            script = try self.script(of: pin, interpreter: interpreter, root: root)
        }
        return ApplicationIdentity(.executable(path: path, sha256: sha256, script: script))
    }

    private func script(of pin: ProcessPin, interpreter: InterpreterCommandLine.Interpreter,
                        root: FileDescriptor) throws(IdentityError) -> ApplicationIdentity.Script {
        let (commandLine, truncated) = try pin.read("cmdline", limit: Self.maximumCommandLine)
        var arguments = commandLine.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        // The last piece is either the empty string after the final NUL or, when the read was
        // cut off, an argument that may be partial: neither is a whole argument.
        if truncated || arguments.last == "" { arguments.removeLast() }
        switch InterpreterCommandLine.find(in: Array(arguments.dropFirst()), for: interpreter) {
        case .none(let reason):
            return .none(reason: reason)
        case .script(let given):
            // Opened as the process would: absolute paths inside its root, others from its
            // working folder. O_NONBLOCK: a FIFO named as the script must not hang the daemon.
            let opened: Int32
            if given.hasPrefix("/") {
                opened = keywell_open_in_root(root.rawValue, given, O_NONBLOCK)
            } else {
                let cwd = try pin.open("cwd", flags: O_RDONLY | O_DIRECTORY)
                defer { try? cwd.close() }
                opened = openat(cwd.rawValue, given, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
            }
            guard opened >= 0 else {
                return .none(reason: "the script \(given.debugDescription) could not be opened (\(ProcessPin.errorText()))")
            }
            let descriptor = FileDescriptor(rawValue: opened)
            defer { try? descriptor.close() }
            do throws(IdentityError) {
                let path = try ProcessPin.path(of: descriptor)
                return .file(path: path, sha256: try digests.sha256(of: descriptor))
            } catch {
                return .none(reason: "the script \(given.debugDescription) is not a file that can be hashed (\(error))")
            }
        }
    }
}
