/// The name of a file in a sync folder (docs/sync.md, "The folder"): `<machine>-<sequence>.rec`
/// for one change, `<machine>-<sequence>.snap` for a snapshot, where only that machine writes
/// names with its id. A sync engine's conflict copy `NAME.sync-conflict-<…>.EXT` is read as
/// NAME: the sealed contents name the file they were written as, so a copy opens only as that.
public struct RecordName: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case record = "rec"
        case snapshot = "snap"
    }

    public let machine: MachineID
    public let sequence: UInt64
    public let kind: Kind

    public init(machine: MachineID, sequence: UInt64, kind: Kind) {
        self.machine = machine
        self.sequence = sequence
        self.kind = kind
    }

    /// The name this machine writes.
    public var description: String { "\(machine.hex)-\(sequence).\(kind.rawValue)" }

    /// The header file holding the wrapped sync key.
    public static let headerFileName = "keywell-sync.header"
    /// Files being written get this prefix and are renamed into place; scans pass over them.
    public static let temporaryPrefix = ".keywell-tmp-"

    /// What a scan makes of a file name.
    public enum Reading: Equatable, Sendable {
        case file(RecordName)
        /// The header, temporary files, and names other tools leave (`.stfolder`, `.git`, …).
        case ignored
        /// A name that looks like a record's but is not one: a renamed or hand-made file.
        case refused(String)
    }

    public static func read(_ fileName: String) -> Reading {
        guard fileName.utf8.count <= SyncLimits.bytesPerFileName else { return .refused("the name is too long") }
        if fileName == headerFileName || fileName.hasPrefix(".") || fileName.hasPrefix("~") { return .ignored }
        let name = withoutConflictSuffix(fileName)
        let dot = name.lastIndex(of: ".")
        let kind = dot.flatMap { Kind(rawValue: String(name[name.index(after: $0)...])) }
        let stem = dot.map { name[..<$0] } ?? name[...]
        let dash = stem.firstIndex(of: "-")
        let machine = dash.flatMap { MachineID(hex: stem[..<$0]) }
        // Neither a record's extension nor a machine id: Syncthing's or Nextcloud's own files,
        // a README the user put there. Not ours, so neither read nor refused.
        guard kind != nil || machine != nil || fileName.contains(".rec") || fileName.contains(".snap") else { return .ignored }
        guard let kind, let dash, let machine else { return .refused("the name is not a machine id, a sequence number and .rec or .snap") }
        let digits = stem[stem.index(after: dash)...]
        guard !digits.isEmpty, digits.utf8.count <= 20, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              digits.first != "0" || digits.count == 1, let sequence = UInt64(digits)
        else { return .refused("the name has no sequence number") }
        return .file(RecordName(machine: machine, sequence: sequence, kind: kind))
    }

    /// `NAME.sync-conflict-<date>-<time>-<device>.EXT` → `NAME.EXT` (Syncthing's form; other
    /// engines' copies get other names and are refused or ignored).
    static func withoutConflictSuffix(_ name: String) -> String {
        guard let marker = name.range(of: ".sync-conflict-") else { return name }
        let rest = name[marker.upperBound...]
        guard let extDot = rest.lastIndex(of: ".") else { return name }
        return String(name[..<marker.lowerBound]) + String(rest[extDot...])
    }
}
