import Foundation
import KeywellDBus

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
    let processFD: Int32?

    static func ask(_ sender: String, on connection: DBusConnection) throws(IdentityError) -> CallerCredentials {
        let reply: [DBusValue]
        do {
            reply = try connection.call(destination: StandardInterface.busName, path: StandardInterface.busPath,
                                        interface: StandardInterface.bus, member: "GetConnectionCredentials",
                                        arguments: [.string(sender)])
        } catch {
            throw .bus(error.message)
        }
        guard let credentials = reply.first?.asStringVariantDict() else { throw .bus("unexpected GetConnectionCredentials reply") }
        let processFD = credentials["ProcessFD"]?.unixFDValue
        guard let pid = credentials["ProcessID"]?.uint32Value, let uid = credentials["UnixUserID"]?.uint32Value else {
            if let processFD { close(processFD) }
            throw .bus("the bus does not know the caller's process or user")
        }
        return CallerCredentials(pid: pid, uid: uid, securityLabel: credentials["LinuxSecurityLabel"]?.bytesValue,
                                 processFD: processFD)
    }
}
