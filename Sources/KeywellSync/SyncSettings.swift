import Foundation
import KeywellCore

/// A keychain's sync settings (docs/sync.md, "What the keychain keeps"), kept in its
/// `sync_setting` rows: the folder, this machine's id and next sequence number, the sync key
/// sealed under the keychain's master key, the last merge, the files refused, each other
/// machine's newest snapshot and what was last seen of it.
public struct SyncSettings: Sendable, Equatable {
    public var folder: String
    public var machine: MachineID
    /// The sequence number the next file this machine writes takes.
    public var nextSequence: UInt64
    public var sealedKey: Data
    /// Milliseconds since 1970; nil before the first merge.
    public var lastMerge: Int64?
    /// Files refused, by name, with why (at most `SyncLimits.refusedNamesKept`).
    public var refused: [String: String]
    public var floors: [MachineID: UInt64]
    public var machines: [MachineID: MachineSeen]
    /// When this machine last wrote into the folder (milliseconds since 1970).
    public var lastWrite: Int64?

    public struct MachineSeen: Sendable, Equatable {
        public var name: String
        /// The newest change of that machine merged here (milliseconds since 1970).
        public var lastChange: Int64

        public init(name: String, lastChange: Int64) {
            self.name = name
            self.lastChange = lastChange
        }
    }

    enum Key {
        static let folder = "folder", machine = "machine", sequence = "sequence", key = "key", lastMerge = "last_merge"
        static let refused = "refused", floors = "floors", machines = "machines", lastWrite = "last_write"
    }

    public init(folder: String, machine: MachineID, sealedKey: Data) {
        self.folder = folder
        self.machine = machine
        nextSequence = 1
        self.sealedKey = sealedKey
        lastMerge = nil
        refused = [:]
        floors = [:]
        machines = [:]
        lastWrite = nil
    }

    /// The settings a keychain holds, or nil when sync is not enabled on it.
    public init?(_ rows: [String: Data]) {
        guard let folder = rows[Key.folder].flatMap({ String(data: $0, encoding: .utf8) }),
              let machine = rows[Key.machine].flatMap({ MachineID(bytes: Array($0)) }),
              let sealedKey = rows[Key.key] else { return nil }
        self.init(folder: folder, machine: machine, sealedKey: sealedKey)
        nextSequence = rows[Key.sequence].flatMap { UInt64(String(decoding: $0, as: UTF8.self)) } ?? 1
        lastMerge = rows[Key.lastMerge].flatMap { Int64(String(decoding: $0, as: UTF8.self)) }
        lastWrite = rows[Key.lastWrite].flatMap { Int64(String(decoding: $0, as: UTF8.self)) }
        for fields in Self.lines(rows[Key.refused]) where fields.count == 2 { refused[fields[0]] = fields[1] }
        for fields in Self.lines(rows[Key.floors]) where fields.count == 2 {
            if let id = MachineID(hex: fields[0]), let floor = UInt64(fields[1]) { floors[id] = floor }
        }
        for fields in Self.lines(rows[Key.machines]) where fields.count == 3 {
            if let id = MachineID(hex: fields[0]), let last = Int64(fields[2]) { machines[id] = MachineSeen(name: fields[1], lastChange: last) }
        }
    }

    /// The rows to write for these settings.
    public var rows: [String: Data?] {
        [
            Key.folder: Data(folder.utf8), Key.machine: Data(machine.bytes), Key.key: sealedKey,
            Key.sequence: Data(String(nextSequence).utf8),
            Key.lastMerge: lastMerge.map { Data(String($0).utf8) },
            Key.lastWrite: lastWrite.map { Data(String($0).utf8) },
            Key.refused: Self.text(refused.sorted { $0.key < $1.key }.map { [$0.key, $0.value] }),
            Key.floors: Self.text(floors.map { [$0.key.hex, String($0.value)] }),
            Key.machines: Self.text(machines.map { [$0.key.hex, $0.value.name, String($0.value.lastChange)] }),
        ]
    }

    /// Text a folder supplied, made safe for a tab-separated line: control characters become spaces.
    public static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : $0 }))
    }

    private static func lines(_ data: Data?) -> [[String]] {
        guard let data else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    private static func text(_ rows: [[String]]) -> Data {
        Data(rows.map { $0.map(printable).joined(separator: "\t") }.joined(separator: "\n").utf8)
    }
}
