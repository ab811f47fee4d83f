import Foundation
import KeywellSync
import Testing

@Suite struct SyncMergeTests {
    let key = SyncKey.random()

    func tag(_ record: SyncRecord) -> ItemTag { key.tag(of: record.identity) }

    @Test func newestWinsAndTheLoserOfConcurrentChangesIsKept() {
        let original = change(genericItem(modified: 100), by: machineA)
        let local = LocalVersion(version: SyncVersion(modified: 300, machine: machineB), base: original.version, deleted: false)
        let theirs = change(genericItem(secret: "new", modified: 200), by: machineA, base: original.version)
        let plan = SyncMerge.plan(local: [tag(theirs): local], arrived: [(tag(theirs), theirs)])
        #expect(plan.apply.isEmpty)
        #expect(plan.conflicts.map(\.loser) == [.arrived(theirs)])
        // The other way round: the arrival is newer, and the local version is kept.
        let newer = change(genericItem(secret: "newer", modified: 400), by: machineA, base: original.version)
        let second = SyncMerge.plan(local: [tag(newer): local], arrived: [(tag(newer), newer)])
        #expect(second.apply[tag(newer)] == newer)
        #expect(second.conflicts.map(\.loser) == [.local(local)])
        #expect(second.versions[tag(newer)] == LocalVersion(version: newer.version, base: original.version, deleted: false))
    }

    @Test func aSuccessionKeepsNoConflict() {
        let first = change(genericItem(modified: 100), by: machineA)
        let local = LocalVersion(version: first.version, base: nil, deleted: false)
        // B edited what it had merged from A: A's version is B's base.
        let edit = change(genericItem(secret: "b", modified: 200), by: machineB, base: first.version)
        #expect(SyncMerge.plan(local: [tag(edit): local], arrived: [(tag(edit), edit)]).conflicts.isEmpty)
        // A's own later change, whatever its base says, follows A's earlier one.
        let later = change(genericItem(secret: "a2", modified: 300), by: machineA, base: nil)
        #expect(SyncMerge.plan(local: [tag(later): local], arrived: [(tag(later), later)]).conflicts.isEmpty)
        // Several versions arriving at once chain up.
        let chain = [first, edit, change(genericItem(secret: "a3", modified: 400), by: machineA, base: edit.version)]
        let plan = SyncMerge.plan(local: [:], arrived: chain.map { (tag($0), $0) })
        #expect(plan.conflicts.isEmpty)
        #expect(plan.apply[tag(first)] == chain[2])
    }

    @Test func tiesGoToTheHigherMachineID() {
        let mine = change(genericItem(secret: "a", modified: 500), by: machineA)
        let theirs = change(genericItem(secret: "b", modified: 500), by: machineB)
        let local = LocalVersion(version: mine.version, base: nil, deleted: false)
        let plan = SyncMerge.plan(local: [tag(mine): local], arrived: [(tag(theirs), theirs)])
        #expect(plan.apply[tag(theirs)] == theirs)
        #expect(plan.conflicts.map(\.loser) == [.local(local)])
        // On the other machine the same two versions give the same winner.
        let otherSide = SyncMerge.plan(local: [tag(theirs): LocalVersion(version: theirs.version, base: nil, deleted: false)],
                                       arrived: [(tag(mine), mine)])
        #expect(otherSide.apply.isEmpty)
        #expect(otherSide.conflicts.map(\.loser) == [.arrived(mine)])
    }

    @Test func tombstonesWinOverOlderAndLoseToNewer() {
        let item = genericItem(modified: 100)
        let created = change(item, by: machineA)
        let deleted = deletion(of: item, at: 200, by: machineA, base: created.version)
        let local = LocalVersion(version: created.version, base: nil, deleted: false)
        let plan = SyncMerge.plan(local: [tag(created): local], arrived: [(tag(deleted), deleted)])
        #expect(plan.apply[tag(deleted)] == deleted)
        #expect(plan.versions[tag(deleted)]?.deleted == true)
        #expect(plan.conflicts.isEmpty)
        // A newer change brings the item back; the deletion is no conflict to keep.
        let revived = change(genericItem(secret: "back", modified: 300), by: machineB)
        let after = SyncMerge.plan(local: [tag(revived): plan.versions[tag(deleted)]!], arrived: [(tag(revived), revived)])
        #expect(after.apply[tag(revived)] == revived)
        #expect(after.conflicts.isEmpty)
        // An older change arriving after the deletion stays deleted, but is kept: it was concurrent.
        let stale = change(genericItem(secret: "stale", modified: 150), by: machineB, base: nil)
        let late = SyncMerge.plan(local: [tag(stale): plan.versions[tag(deleted)]!], arrived: [(tag(stale), stale)])
        #expect(late.apply.isEmpty)
        #expect(late.conflicts.map(\.loser) == [.arrived(stale)])
    }

    @Test func aVersionAlreadyHeldChangesNothing() {
        let record = change(genericItem(modified: 100), by: machineA)
        let local = LocalVersion(version: record.version, base: nil, deleted: false)
        let plan = SyncMerge.plan(local: [tag(record): local], arrived: [(tag(record), record), (tag(record), record)])
        #expect(plan.apply.isEmpty && plan.conflicts.isEmpty && plan.versions.isEmpty)
    }
}
