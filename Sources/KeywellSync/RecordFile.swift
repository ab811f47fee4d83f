import Foundation
import KeywellCore

/// A record or snapshot file's bytes (docs/sync.md, "Records"): a 4-byte magic, the format, the
/// id of the key it was sealed under, then one XChaCha20-Poly1305 box. The associated data is
/// everything before the box and the name the file was written as, and the box holds the
/// item's identity and version: a file altered, cut, or renamed fails to open, and one that
/// opens can only be the change its writer made under that name.
public enum RecordFile {
    static let magic = Array("KWSR".utf8)
    static let format: UInt8 = 1
    static let prefixLength = 4 + 1 + 16

    /// One record's file. `record.version.machine` must be `name.machine`.
    public static func seal(_ record: SyncRecord, name: RecordName, key: SyncKey) -> [UInt8] {
        precondition(name.kind == .record && record.version.machine == name.machine)
        var plain = ByteWriter()
        RecordCoding.encode(record, into: &plain)
        defer { SecretWipe.wipe(plain.bytes) }
        return box(plain.bytes, name: name, key: key)
    }

    /// A snapshot's file: the writer's latest records, every one by `name.machine`.
    public static func seal(snapshot records: [SyncRecord], name: RecordName, key: SyncKey) -> [UInt8] {
        precondition(name.kind == .snapshot && records.allSatisfy { $0.version.machine == name.machine })
        var plain = ByteWriter()
        plain.number(UInt64(records.count), width: 4)
        for record in records { RecordCoding.encode(record, into: &plain) }
        defer { SecretWipe.wipe(plain.bytes) }
        return box(plain.bytes, name: name, key: key)
    }

    /// The records a file holds, or why it is refused. `name` is what the scan read from its file
    /// name (a conflict copy's stripped of its suffix).
    public static func open(_ bytes: [UInt8], name: RecordName, key: SyncKey) throws(SyncRefusal) -> [SyncRecord] {
        let cap = name.kind == .record ? SyncLimits.bytesPerRecord : SyncLimits.bytesPerSnapshot
        guard bytes.count <= cap else { throw SyncRefusal("it is larger than \(cap >> 20) MiB") }
        guard bytes.count >= prefixLength, Array(bytes[0..<4]) == magic, bytes[4] == format else {
            throw SyncRefusal("it is not a Keywell sync record")
        }
        guard Array(bytes[5..<prefixLength]) == key.id else { throw SyncRefusal("it was sealed under another sync key") }
        let sealed = Data(bytes[prefixLength...])
        guard let length = Sodium.openedLength(of: sealed) else { throw SyncRefusal("its contents are cut short") }
        var plain = [UInt8](repeating: 0, count: length)
        defer { SecretWipe.wipe(plain) }
        let opened = plain.withUnsafeMutableBytes {
            Sodium.open(sealed, key: key.sealingKey, associatedData: associatedData(Array(bytes[0..<prefixLength]), name: name), into: $0)
        }
        guard opened else { throw SyncRefusal("it fails to authenticate (altered, cut, or renamed)") }
        var reader = ByteReader(plain)
        var records: [SyncRecord] = []
        switch name.kind {
        case .record:
            records.append(try RecordCoding.decode(from: &reader))
        case .snapshot:
            let count = try reader.number(width: 4)
            guard count <= UInt64(SyncLimits.recordsPerSnapshot) else { throw SyncRefusal("a snapshot holds too many records") }
            for _ in 0..<count { records.append(try RecordCoding.decode(from: &reader)) }
        }
        try reader.finish()
        guard records.allSatisfy({ $0.version.machine == name.machine }) else {
            throw SyncRefusal("it holds a change another machine made")
        }
        return records
    }

    /// Whether `bytes` is a record sealed under another key (one from before a `sync rekey`):
    /// such a file is passed over, neither merged nor counted as damaged.
    public static func isUnderAnotherKey(_ bytes: [UInt8], key: SyncKey) -> Bool {
        bytes.count >= prefixLength && Array(bytes[0..<4]) == magic && bytes[4] == format && Array(bytes[5..<prefixLength]) != key.id
    }

    private static func box(_ plain: [UInt8], name: RecordName, key: SyncKey) -> [UInt8] {
        let prefix = magic + [format] + key.id
        let sealed = plain.withUnsafeBytes { Sodium.seal($0, key: key.sealingKey, associatedData: associatedData(prefix, name: name)) }
        return prefix + Array(sealed)
    }

    private static func associatedData(_ prefix: [UInt8], name: RecordName) -> Data {
        Data(prefix + Array(name.description.utf8))
    }
}
