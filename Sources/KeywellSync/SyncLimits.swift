/// Caps on what a sync folder may hold (docs/sync.md, "Limits"): a folder is written by other
/// machines and carried by a sync engine, so everything read from it is bounded before use.
public enum SyncLimits {
    /// Bytes of one record file: the largest secret plus every attribute at its cap fits.
    public static let bytesPerRecord = 4 << 20
    /// Bytes of one snapshot file (a machine's latest records in one file).
    public static let bytesPerSnapshot = 256 << 20
    /// Records in one snapshot.
    public static let recordsPerSnapshot = 100_000
    /// Files a folder may hold; a scan stops reading past this many.
    public static let filesPerFolder = 200_000
    /// Machines whose files one folder may hold.
    public static let machines = 64
    /// Bytes of a machine's name (its host name, as `sync status` shows it).
    public static let bytesPerMachineName = 255
    /// Bytes of a file name the scan looks at; longer names are refused unread.
    public static let bytesPerFileName = 255
    /// Bytes of the header file.
    public static let bytesPerHeader = 4096
    /// Refused file names remembered for `sync status --json`.
    public static let refusedNamesKept = 1_000
    /// A machine writes a snapshot once it has this many record files of its own past its last one
    /// and more of them than it has live items (docs/sync.md, "Compaction").
    public static let recordsBeforeSnapshot = 64
}
