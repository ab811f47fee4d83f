/// What a keychain knows of an item's sync history: the version it holds (or deleted, a
/// tombstone), and the version that one replaced.
public struct LocalVersion: Sendable, Equatable {
    public var version: SyncVersion
    public var base: SyncVersion?
    public var deleted: Bool

    public init(version: SyncVersion, base: SyncVersion?, deleted: Bool) {
        self.version = version
        self.base = base
        self.deleted = deleted
    }
}

/// A losing version the merge keeps (`sync conflicts`): the local one (the caller reads its
/// contents from the keychain before it is replaced) or one that arrived.
public enum ConflictLoser: Sendable, Equatable {
    case local(LocalVersion)
    case arrived(SyncRecord)

    public var version: SyncVersion {
        switch self {
        case .local(let local): local.version
        case .arrived(let record): record.version
        }
    }
}

public struct SyncConflict: Sendable, Equatable {
    public var tag: ItemTag
    public var loser: ConflictLoser
    public var winner: SyncVersion
}

/// What one merge does: the winning arrivals to write into the keychain (an item or its
/// deletion), the losers to keep, and the keychain's new sync versions. Applied in one
/// transaction by the caller.
public struct SyncMergePlan: Sendable {
    public var apply: [ItemTag: SyncRecord] = [:]
    public var conflicts: [SyncConflict] = []
    public var versions: [ItemTag: LocalVersion] = [:]
}

/// The merge rules (docs/sync.md, "Merging"), as a pure function of what the keychain holds
/// and what arrived: per item the newest version wins (modification time, then machine id); a
/// deletion is a version like any other, so it wins over older changes and loses to newer ones;
/// the loser of two concurrent changes is kept unless it is a deletion.
public enum SyncMerge {
    public static func plan(local: [ItemTag: LocalVersion], arrived: [(tag: ItemTag, record: SyncRecord)]) -> SyncMergePlan {
        var byTag: [ItemTag: [SyncRecord]] = [:]
        for (tag, record) in arrived { byTag[tag, default: []].append(record) }
        var plan = SyncMergePlan()
        for (tag, records) in byTag {
            var current: ConflictLoser? = local[tag].map { .local($0) }
            for record in records.sorted(by: { $0.version < $1.version }) {
                guard let held = current else {
                    current = .arrived(record)
                    continue
                }
                if record.version == held.version { continue }
                let (winner, loser): (ConflictLoser, ConflictLoser) = record.version > held.version ? (.arrived(record), held) : (held, .arrived(record))
                if !isDeletion(loser) && !precedes(loser, winner) {
                    plan.conflicts.append(SyncConflict(tag: tag, loser: loser, winner: winner.version))
                }
                current = winner
            }
            if case .arrived(let record)? = current {
                plan.apply[tag] = record
                plan.versions[tag] = LocalVersion(version: record.version, base: record.base, deleted: record.isTombstone)
            }
        }
        return plan
    }

    private static func isDeletion(_ version: ConflictLoser) -> Bool {
        switch version {
        case .local(let local): local.deleted
        case .arrived(let record): record.isTombstone
        }
    }

    private static func base(of version: ConflictLoser) -> SyncVersion? {
        switch version {
        case .local(let local): local.base
        case .arrived(let record): record.base
        }
    }

    /// Whether the winner's writer had seen the loser: it replaced it, wrote it itself (a
    /// machine sees its own changes), or replaced a version at least as new. Otherwise the two
    /// were made apart, and the loser is kept.
    private static func precedes(_ loser: ConflictLoser, _ winner: ConflictLoser) -> Bool {
        if loser.version.machine == winner.version.machine { return true }
        guard let base = base(of: winner) else { return false }
        return loser.version <= base
    }
}
