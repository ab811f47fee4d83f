/// One version of an item: when it was made (its modification time, milliseconds since 1970)
/// and by which machine. Newer wins; in the same millisecond, the higher machine id.
public struct SyncVersion: Hashable, Comparable, Sendable {
    public var modified: Int64
    public var machine: MachineID

    public init(modified: Int64, machine: MachineID) {
        self.modified = modified
        self.machine = machine
    }

    public static func < (left: SyncVersion, right: SyncVersion) -> Bool {
        left.modified != right.modified ? left.modified < right.modified : left.machine < right.machine
    }
}
