import Foundation

/// What a folder holds for a merge: the other machines' records, the files refused (with why),
/// the machines seen, each machine's newest snapshot, and this machine's own files (which it
/// never merges: its keychain already holds them).
public struct FolderContents: Sendable {
    public var records: [(name: RecordName, record: SyncRecord)] = []
    public var refused: [(file: String, reason: String)] = []
    /// Each other machine's name and the newest version it wrote, from what was read.
    public var machines: [MachineID: (name: String, lastChange: Int64)] = [:]
    /// Each machine's newest snapshot: its files numbered below are superseded.
    public var floors: [MachineID: UInt64] = [:]
    /// Files older than their machine's snapshot (a replayed old file is one), and files sealed
    /// under a key from before a `sync rekey`: never merged, not counted as refused.
    public var superseded: [String] = []
    public var ownFiles: [RecordName] = []
    /// Files opened and read whole (a later scan may skip them).
    public var read: [String] = []
}

/// Reads a folder for a merge (docs/sync.md, "Merging"). A file that fails any check is
/// refused by itself; the rest still merges.
public enum FolderScan {
    /// `floors`: the snapshots seen before (a snapshot removed later does not let older files
    /// back in). `skip`: files already merged, by name, left unread.
    public static func scan(
        _ folder: SyncFolder, key: SyncKey, me: MachineID, floors known: [MachineID: UInt64] = [:],
        skip: (String) -> Bool = { _ in false }
    ) throws -> FolderContents {
        var contents = FolderContents()
        var byMachine: [MachineID: [(file: String, name: RecordName)]] = [:]
        for file in try folder.names() {
            switch RecordName.read(file) {
            case .ignored: continue
            case .refused(let reason): contents.refused.append((file, reason))
            case .file(let name):
                if name.machine == me {
                    contents.ownFiles.append(name)
                } else if byMachine[name.machine] != nil || byMachine.count < SyncLimits.machines - 1 {
                    byMachine[name.machine, default: []].append((file, name))
                } else {
                    contents.refused.append((file, "the folder already holds \(SyncLimits.machines) machines' files"))
                }
            }
        }
        for (machine, files) in byMachine {
            let newestSnapshot = files.filter { $0.name.kind == .snapshot }.map(\.name.sequence).max()
            let floor = max(known[machine] ?? 0, newestSnapshot ?? 0)
            if floor > 0 { contents.floors[machine] = floor }
            for (file, name) in files.sorted(by: { $0.name.sequence < $1.name.sequence }) {
                if name.sequence < floor || (name.sequence == floor && name.kind == .record && floor > 0) {
                    contents.superseded.append(file)
                    continue
                }
                if skip(file) { continue }
                let cap = name.kind == .record ? SyncLimits.bytesPerRecord : SyncLimits.bytesPerSnapshot
                do throws(SyncRefusal) {
                    guard let bytes = try folder.read(file, limit: cap) else { continue }
                    if RecordFile.isUnderAnotherKey(bytes, key: key) {
                        contents.superseded.append(file)
                        continue
                    }
                    let records = try RecordFile.open(bytes, name: name, key: key)
                    contents.read.append(file)
                    for record in records {
                        contents.records.append((name, record))
                        let seen = contents.machines[machine]?.lastChange ?? .min
                        if record.version.modified >= seen { contents.machines[machine] = (record.machineName, record.version.modified) }
                    }
                } catch {
                    contents.refused.append((file, error.reason))
                }
            }
        }
        return contents
    }
}

/// Compaction (docs/sync.md, "Compaction"): a machine replaces its own record files by one
/// snapshot of its latest records, so the folder grows with the items, not with the history.
public enum SyncCompaction {
    /// Whether this machine should write a snapshot: enough files of its own since the last one,
    /// and more of them than it has live records.
    public static func isDue(ownFiles: [RecordName], liveRecords: Int) -> Bool {
        let lastSnapshot = ownFiles.filter { $0.kind == .snapshot }.map(\.sequence).max() ?? 0
        let since = ownFiles.filter { $0.kind == .record && $0.sequence > lastSnapshot }.count
        return since >= SyncLimits.recordsBeforeSnapshot && ownFiles.count > liveRecords
    }

    /// Writes `latest` (this machine's newest record per item it wrote last, deletions included)
    /// as snapshot `sequence`, then removes every older file of this machine. The snapshot is
    /// in place before anything goes, so a crash between loses nothing.
    public static func compact(
        _ folder: SyncFolder, latest: [SyncRecord], me: MachineID, sequence: UInt64, ownFiles: [RecordName], key: SyncKey
    ) throws {
        let name = RecordName(machine: me, sequence: sequence, kind: .snapshot)
        try folder.write(RecordFile.seal(snapshot: latest, name: name, key: key), as: name.description)
        for old in ownFiles where old.sequence < sequence { folder.remove(old.description) }
    }
}
