import KeywellIdentity
import KeywellSystem

/// What a question calls a program when it has a name people know it by (docs/access-control.md,
/// "The words"); nil leaves the question to the identity's own name (its file name, app id).
public protocol ProgramNaming: Sendable {
    func name(of identity: ApplicationIdentity) -> String?
}

/// No desktop entries: every program goes by its identity's own name (tests, and callers
/// with no session).
public struct IdentityNamesOnly: ProgramNaming {
    public init() {}
    public func name(of identity: ApplicationIdentity) -> String? { nil }
}

/// Names from the desktop entries: the entry whose program is the caller's executable, or for an
/// interpreter its script; a Flatpak app's entry by its app id.
public struct DesktopProgramNaming: ProgramNaming {
    private let entries: DesktopEntryNames

    public init(_ entries: DesktopEntryNames) { self.entries = entries }

    public func name(of identity: ApplicationIdentity) -> String? {
        switch identity.kind {
        // An interpreter's entry would name the interpreter, not the script that asks.
        case .executable(_, _, .file(let script, _)?): entries.name(ofProgram: script)
        case .executable(let path, _, _): entries.name(ofProgram: path)
        case .flatpak(let appID): entries.name(ofEntry: appID)
        case .snap: nil
        }
    }
}
