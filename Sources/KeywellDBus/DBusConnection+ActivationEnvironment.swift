import KeywellSystem

extension DBusConnection {
    /// The session's activation environment, where a desktop exports `DISPLAY` after the daemon
    /// started (`dbus-update-activation-environment --systemd`, `systemctl --user import-environment`):
    /// systemd's user manager keeps it as its `Environment` property. A plain dbus-daemon keeps its
    /// own list but offers no way to read it back, so without systemd this is empty (docs/prompts.md).
    public func activationEnvironment() -> [String: String] {
        do {
            let reply = try call(
                destination: "org.freedesktop.systemd1", path: "/org/freedesktop/systemd1",
                interface: "org.freedesktop.DBus.Properties", member: "Get",
                arguments: [.string("org.freedesktop.systemd1.Manager"), .string("Environment")], timeout: .seconds(2), autoStart: false)
            let lines = reply.first?.unwrappingVariants.arrayElements?.compactMap(\.stringValue) ?? []
            return PrompterChoice.parse(assignments: lines)
        } catch {
            return [:]
        }
    }
}
