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

extension ProgramNaming {
    /// What the words call the program an access-list entry names (`exe:…`, `flatpak:…`,
    /// `snap:…`): its desktop entry's name, else the identity's own name, else the entry itself
    /// (which `DialogText` then defuses).
    func name(ofEntry entry: String) -> String {
        guard let identity = ApplicationIdentity(listEntry: entry) else { return entry }
        return name(of: identity) ?? identity.displayName
    }
}

extension ApplicationIdentity {
    /// The identity an access-list entry spells (`ApplicationIdentity.string`'s forms); nil for
    /// anything else. Paths hold no `;` (`AccessList.unhashed`), so the parts split cleanly.
    init?(listEntry entry: String) {
        if entry.hasPrefix("flatpak:") {
            self.init(.flatpak(appID: String(entry.dropFirst("flatpak:".count))))
            return
        }
        if entry.hasPrefix("snap:") {
            self.init(.snap(label: String(entry.dropFirst("snap:".count)), enforced: false))
            return
        }
        guard entry.hasPrefix("exe:") else { return nil }
        let parts = entry.dropFirst("exe:".count).split(separator: ";", omittingEmptySubsequences: false)
        guard let path = parts.first, path.hasPrefix("/") else { return nil }
        func field(_ name: String) -> String? {
            parts.dropFirst().first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
        }
        let script = field("script").map { ApplicationIdentity.Script.file(path: $0, sha256: field("script-sha256") ?? "") }
        self.init(.executable(path: String(path), sha256: field("sha256"), script: script))
    }
}
