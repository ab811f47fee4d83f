import Foundation

/// The scratch folder and session-bus configuration every benchmark world starts from: the
/// session bus's own rules (EXTERNAL: same uid only), an optional activation folder, and the
/// limits a world needs raised.
enum PrivateBusConfiguration {
    /// A new private folder under /tmp named `<prefix>-XXXXXX`.
    static func makeScratchFolder(prefix: String) throws -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw BenchmarkFailure("cannot create a temporary folder") }
        return String(cString: created)
    }

    /// Writes a dbus-daemon configuration to `path`. `allowAnyUser` lets processes of other
    /// uids that passed authentication talk on the bus; `limits` are dbus-daemon `<limit>`s.
    static func write(to path: String, listen: String, serviceDirectory: String? = nil,
                      allowAnyUser: Bool = false, limits: KeyValuePairs<String, Int> = [:]) throws {
        let serviceLine = serviceDirectory.map { "\n  <servicedir>\($0)</servicedir>" } ?? ""
        let anyUser = allowAnyUser ? "<allow user=\"*\"/>" : ""
        let limitLines = limits.map { "\n  <limit name=\"\($0.key)\">\($0.value)</limit>" }.joined()
        let configuration = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(listen)</listen>
              <auth>EXTERNAL</auth>\(serviceLine)
              <policy context="default">\(anyUser)<allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>\(limitLines)
            </busconfig>
            """
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
