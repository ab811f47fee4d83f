import Foundation
import KeywellDBus
import KeywellSystem

/// What the bus knows about a connection (`GetConnectionCredentials`): the kernel's answer for
/// the peer's socket when it connected.
struct CallerCredentials {
    let pid: UInt32
    let uid: UInt32
    /// `LinuxSecurityLabel`: the AppArmor or SELinux label, NUL-terminated; nil when the bus
    /// runs without one.
    let securityLabel: [UInt8]?
    /// `ProcessFD`: a pidfd from the bus itself (dbus-daemon 1.15.6 and later), which closes the
    /// pid-reuse window entirely. Owned by whoever takes it.
    let processFD: FileDescriptor?

    /// Asks the bus for `sender`'s credentials and returns at once: it answers while the caller works
    /// (the I/O thread hands the call to a worker meanwhile, `ApplicationIdentities.prefetch`).
    static func start(_ sender: String, on connection: DBusConnection) throws(IdentityError) -> Question {
        do {
            return Question(call: try connection.startCall(destination: StandardInterface.busName, path: StandardInterface.busPath,
                                                           interface: StandardInterface.bus, member: "GetConnectionCredentials",
                                                           arguments: [.string(sender)]))
        } catch {
            throw .bus(error.message)
        }
    }

    /// A `GetConnectionCredentials` on its way.
    struct Question: Sendable {
        let call: DBusCallInFlight

        /// Waits for the bus's answer. Not from the D-Bus I/O thread.
        func answer() throws(IdentityError) -> CallerCredentials {
            let reply: [DBusValue]
            do { reply = try call.reply() } catch { throw .bus(error.message) }
            return try CallerCredentials(reply)
        }
    }

    private init(_ reply: [DBusValue]) throws(IdentityError) {
        guard let credentials = reply.first?.asStringVariantDict() else { throw .bus("unexpected GetConnectionCredentials reply") }
        let processFD = credentials["ProcessFD"]?.unixFDValue.map(FileDescriptor.init(rawValue:))
        guard let pid = credentials["ProcessID"]?.uint32Value, let uid = credentials["UnixUserID"]?.uint32Value else {
            if let processFD { try? processFD.close() }
            throw .bus("the bus does not know the caller's process or user")
        }
        self.pid = pid
        self.uid = uid
        securityLabel = credentials["LinuxSecurityLabel"]?.bytesValue
        self.processFD = processFD
    }
}
