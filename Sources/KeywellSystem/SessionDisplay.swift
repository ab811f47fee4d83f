
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The graphical session's display as the session tells keywelld (`keywell session-display`,
/// run by the autostart entry): a keywelld that pam_keywell started before the desktop has none
/// in its own environment (docs/prompts.md, "A daemon started before the desktop"). Only these
/// three variables, each checked, since whoever sets them decides where keywelld's dialogs go.
public struct SessionDisplay: Sendable, Equatable {
    /// The variables taken, and no others.
    public static let variables = ["DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY"]
    /// `host:N.M`: a host name is at most 253 bytes, the numbers a few more.
    public static let maximumDisplayBytes = 255
    /// A Unix socket's path fits in `sun_path` (108 bytes with its NUL).
    public static let maximumWaylandBytes = 107
    /// PATH_MAX.
    public static let maximumPathBytes = 4096

    /// Only variables of `variables`, with non-empty checked values.
    public let environment: [String: String]

    /// Checks every variable of `environment` (the empty ones are left out); `owner` must own
    /// the `XAUTHORITY` file. At least one of `DISPLAY` and `WAYLAND_DISPLAY` is needed.
    public init(checking environment: [String: String], owner: uid_t = getuid()) throws(Refusal) {
        for name in environment.keys.sorted() where !Self.variables.contains(name) {
            throw Refusal("\(Self.shown(name)) is not one of \(Self.variables.joined(separator: ", "))")
        }
        let given = environment.filter { !$0.value.isEmpty }
        guard given["DISPLAY"] != nil || given["WAYLAND_DISPLAY"] != nil else {
            throw Refusal("neither DISPLAY nor WAYLAND_DISPLAY is set: there is no graphical session to tell keywelld about")
        }
        if let display = given["DISPLAY"] { try Self.checkDisplay(display) }
        if let wayland = given["WAYLAND_DISPLAY"] { try Self.checkWayland(wayland) }
        if let authority = given["XAUTHORITY"] { try Self.checkAuthority(authority, owner: owner) }
        self.environment = given
    }

    /// Why a variable was refused, in words for the person and the log.
    public struct Refusal: Error, CustomStringConvertible, Sendable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// `:N`, `:N.M`, `host:N` or `host:N.M` (X11's forms; `unix:N` is a host name too).
    static func checkDisplay(_ value: String) throws(Refusal) {
        guard value.utf8.count <= maximumDisplayBytes else {
            throw Refusal("DISPLAY is \(value.utf8.count) bytes; at most \(maximumDisplayBytes) are accepted")
        }
        let refusal = Refusal("DISPLAY=\(shown(value)) is not an X display (:N, :N.M, host:N or host:N.M)")
        guard let colon = value.lastIndex(of: ":") else { throw refusal }
        let host = value[..<colon]
        let number = value[value.index(after: colon)...].split(separator: ".", omittingEmptySubsequences: false)
        guard host.utf8.allSatisfy({ isHostByte($0) }), (1...2).contains(number.count),
              number.allSatisfy({ !$0.isEmpty && $0.count <= 9 && $0.utf8.allSatisfy { (48...57).contains($0) } }) else {
            throw refusal
        }
    }

    /// A socket name in `$XDG_RUNTIME_DIR` (`wayland-0`) or an absolute path to one.
    static func checkWayland(_ value: String) throws(Refusal) {
        guard value.utf8.count <= maximumWaylandBytes else {
            throw Refusal("WAYLAND_DISPLAY is \(value.utf8.count) bytes; at most \(maximumWaylandBytes) are accepted")
        }
        let components = value.split(separator: "/")
        guard value.utf8.allSatisfy({ isNameByte($0) || $0 == UInt8(ascii: "/") }),
              value.hasPrefix("/") || !value.contains("/"),
              !components.isEmpty, !components.contains(where: { $0 == "." || $0 == ".." }) else {
            throw Refusal("WAYLAND_DISPLAY=\(shown(value)) is not a socket name (wayland-0) or an absolute path to one")
        }
    }

    /// An absolute path to a regular file `owner` owns.
    static func checkAuthority(_ value: String, owner: uid_t) throws(Refusal) {
        guard value.utf8.count <= maximumPathBytes else {
            throw Refusal("XAUTHORITY is \(value.utf8.count) bytes; at most \(maximumPathBytes) are accepted")
        }
        guard value.hasPrefix("/"), !value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw Refusal("XAUTHORITY=\(shown(value)) is not an absolute path")
        }
        var info = stat()
        guard stat(value, &info) == 0 else {
            throw Refusal("XAUTHORITY=\(shown(value)) cannot be read: \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == owner else {
            throw Refusal("XAUTHORITY=\(shown(value)) is not a file of this user (uid \(owner))")
        }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    private static func isHostByte(_ byte: UInt8) -> Bool { isNameByte(byte) || byte == UInt8(ascii: ":") }

    /// A value as an error shows it: at most 64 characters, control characters escaped.
    static func shown(_ value: String) -> String {
        let cut = value.count > 64 ? String(value.prefix(64)) + "…" : value
        return "\"" + cut.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
            .joined() + "\""
    }
}

/// The display keywelld learned from the session, kept until the user's last login session
/// closes (or keywelld exits): shared by every prompter keywelld starts (`PrompterChoice`).
public final class LearnedSessionDisplay: Sendable {
    private let learned = Protected<[String: String]>([:])

    public init() {}

    /// Replaces what was learned before (a new desktop session has new values).
    public func learn(_ display: SessionDisplay) { learned.withLock { $0 = display.environment } }

    /// Forgets it; whether there was anything to forget.
    @discardableResult
    public func forget() -> Bool {
        learned.withLock { learned in
            defer { learned = [:] }
            return !learned.isEmpty
        }
    }

    /// The learned variables; empty when nothing was learned or it was forgotten.
    public var environment: [String: String] { learned.withLock { $0 } }
}
