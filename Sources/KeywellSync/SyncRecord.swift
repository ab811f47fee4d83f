import Foundation
import KeywellCore
import KeywellProtocol

/// One change to one item, as a machine wrote it into the folder: the item's new contents or
/// its deletion (a tombstone), the version it makes, and the version it replaced there.
public struct SyncRecord: Sendable, Equatable {
    public enum Change: Sendable, Equatable {
        case item(SyncItem)
        case deleted(ItemIdentity)
    }

    public var version: SyncVersion
    /// The version this machine held when it made the change: a version the writer had seen
    /// (nil for an item it made). The merge tells successions from concurrent changes by it.
    public var base: SyncVersion?
    /// The writing machine's name (its host name), for `sync status` and `sync conflicts`.
    public var machineName: String
    public var change: Change

    public init(version: SyncVersion, base: SyncVersion?, machineName: String, change: Change) {
        self.version = version
        self.base = base
        self.machineName = machineName
        self.change = change
    }

    public var identity: ItemIdentity {
        switch change {
        case .item(let item): item.identity
        case .deleted(let identity): identity
        }
    }

    public var isTombstone: Bool {
        if case .deleted = change { return true }
        return false
    }

    public var item: SyncItem? {
        if case .item(let item) = change { return item }
        return nil
    }
}
