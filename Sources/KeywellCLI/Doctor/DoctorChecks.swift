import FoundationEssentials
import KeywellDBus
import KeywellProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The checks `keywell doctor` runs, in the order a setup depends on them.
enum DoctorChecks {
    static func run(into report: inout DoctorReport) {
        defer { ptraceScope(into: &report) }
        defer { sshAgent(into: &report) }
        guard let bus = sessionBus(into: &report) else { return }
        defer { bus.close() }
        guard let daemon = keywelld(on: bus, into: &report) else { return }
        identity(on: bus, into: &report)
        secretService(on: bus, daemon: daemon, into: &report)
        loginKeychain(on: bus, into: &report)
        AccessQuestionCheck.enforcement(on: bus, into: &report)
        AccessQuestionCheck.grants(AccessQuestionCheck.prompter(on: bus, into: &report), into: &report)
        pamProfile(into: &report)
    }

    private static func sessionBus(into report: inout DoctorReport) -> DBusConnection? {
        guard let address = DBusConnection.sessionBusAddress() else {
            report.problem("session bus", "neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set")
            return nil
        }
        do {
            let bus = try DBusConnection(address: address)
            report.ok("session bus", address)
            return bus
        } catch {
            report.problem("session bus", "cannot connect to \(address): \(error.message)")
            return nil
        }
    }

    /// keywelld's unique name, starting it by D-Bus activation if it is not running.
    private static func keywelld(on bus: DBusConnection, into report: inout DoctorReport) -> String? {
        do {
            try bus.ping(KeywellNames.busName, path: KeywellNames.objectPath)
            guard let owner = try bus.nameOwner(KeywellNames.busName) else {
                report.problem("keywelld", "it answered but left \(KeywellNames.busName)")
                return nil
            }
            let pid = (try? bus.unixProcessID(of: owner)).map { "pid \($0), " } ?? ""
            report.ok("keywelld", "running (\(pid)\(owner))")
            return owner
        } catch {
            report.problem("keywelld", "\(KeywellNames.busName) does not answer (\(error.message)); "
                + "is keywelld installed with its D-Bus activation file? (docs/install.md)")
            return nil
        }
    }

    private static func identity(on bus: DBusConnection, into report: inout DoctorReport) {
        do {
            let reply = try bus.call(destination: KeywellNames.busName, path: KeywellNames.objectPath,
                                     interface: KeywellNames.interface, member: NativeMethod.whoAmI.name)
            let identity = try reply.string(at: 0)
            let strength = try reply.string(at: 1)
            let reason = try reply.string(at: 2)
            report.ok("identity", "\(identity) (\(strength): \(reason))")
        } catch {
            let text = KeychainError(dbusErrorName: error.name, message: error.message)?.description ?? error.message
            report.problem("identity", "keywelld cannot identify this program: \(text)")
        }
    }

    private static func secretService(on bus: DBusConnection, daemon: String, into report: inout DoctorReport) {
        do {
            guard let owner = try bus.nameOwner(KeywellNames.secretsBusName) else {
                report.problem("Secret Service", "nobody owns \(KeywellNames.secretsBusName): libsecret apps cannot store secrets")
                return
            }
            guard owner == daemon else {
                let who = (try? bus.unixProcessID(of: owner)).map { pid in
                    "pid \(pid)" + (executable(of: pid).map { " (\($0))" } ?? "")
                } ?? owner
                report.problem("Secret Service", "\(KeywellNames.secretsBusName) is served by \(who), not keywelld: "
                    + "libsecret apps keep their secrets there (docs/secret-service.md)")
                return
            }
            report.ok("Secret Service", "served by keywelld")
        } catch {
            report.problem("Secret Service", "cannot ask the bus: \(error.message)")
        }
    }

    private static func loginKeychain(on bus: DBusConnection, into report: inout DoctorReport) {
        do {
            let name = try nativeCall(bus, .getLoginKeychain).string(at: 0)
            let info = try nativeCall(bus, .getInfo, [.string(name)]).first?.asStringVariantDict() ?? [:]
            let path = info[KeychainInfoKey.path]?.stringValue ?? name
            if info[KeychainInfoKey.locked]?.boolValue == true {
                report.note("login keychain", "\(path) is locked (unlock it with `keywell unlock-keychain \(name)`)")
            } else {
                report.ok("login keychain", "\(path), unlocked")
            }
        } catch {
            let status = KeychainError(dbusErrorName: error.name, message: error.message)
            if status?.status == SecStatus.noSuchKeychain {
                report.problem("login keychain", "there is none yet: pam_keywell makes it at the next login, "
                    + "or make it with `keywell create-keychain login`")
            } else {
                report.problem("login keychain", status?.description ?? error.message)
            }
        }
    }

    private static func pamProfile(into report: inout DoctorReport) {
        let files = PAMProfile.filesNamingModule()
        if files.isEmpty {
            report.note("PAM", "no file of \(PAMProfile.folder) names pam_keywell.so: the login keychain is not "
                + "unlocked when you log in (docs/install.md)")
        } else {
            report.ok("PAM", "pam_keywell.so in \(files.joined(separator: ", "))")
        }
    }

    /// Whether this shell's `SSH_AUTH_SOCK` is keywelld's agent (docs/ssh.md).
    private static func sshAgent(into report: inout DoctorReport) {
        guard let ours = SSHAgentCommand.socketPath() else { return }
        guard let value = getenv("SSH_AUTH_SOCK").map({ String(cString: $0) }), !value.isEmpty else {
            report.note("SSH agent", "SSH_AUTH_SOCK is not set: ssh uses no agent here; Keywell's is \(ours) "
                + "(export SSH_AUTH_SOCK=$(keywell ssh-agent --print-socket))")
            return
        }
        guard sameFile(value, ours) || value == ours else {
            report.note("SSH agent", "SSH_AUTH_SOCK is \(value), another agent: ssh's keys are not in the keychain; "
                + "Keywell's agent is \(ours)")
            return
        }
        var status = stat()
        guard stat(ours, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else {
            report.note("SSH agent", "SSH_AUTH_SOCK is Keywell's agent, \(ours), but keywelld is not serving it now")
            return
        }
        report.ok("SSH agent", "SSH_AUTH_SOCK is Keywell's agent, \(ours)")
    }

    private static func sameFile(_ one: String, _ other: String) -> Bool {
        var first = stat()
        var second = stat()
        return stat(one, &first) == 0 && stat(other, &second) == 0 && first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    private static func ptraceScope(into report: inout DoctorReport) {
        report.note("kernel.yama.ptrace_scope", PtraceScope.meaning(PtraceScope.read()))
    }

    static func nativeCall(_ bus: DBusConnection, _ method: NativeMethod, _ arguments: [DBusValue] = []) throws(DBusError) -> [DBusValue] {
        try bus.call(destination: KeywellNames.busName, path: KeywellNames.objectPath, interface: KeywellNames.interface,
                     member: method.name, arguments: arguments)
    }

    private static func executable(of pid: UInt32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
    }
}
