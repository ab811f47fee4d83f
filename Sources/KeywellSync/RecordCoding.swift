import Foundation
import KeywellCore
import KeywellProtocol

/// A record's plaintext (docs/sync.md, "Records"): what is sealed, never what the folder shows.
enum RecordCoding {
    static let itemKind: UInt8 = 1
    static let tombstoneKind: UInt8 = 2

    /// The caller wipes the bytes once sealed: they hold the secret.
    static func encode(_ record: SyncRecord, into writer: inout ByteWriter) {
        writer.byte(record.isTombstone ? tombstoneKind : itemKind)
        version(record.version, into: &writer)
        if let base = record.base {
            writer.byte(1)
            version(base, into: &writer)
        } else {
            writer.byte(0)
        }
        writer.text(String(record.machineName.utf8.prefix(SyncLimits.bytesPerMachineName)) ?? "")
        switch record.change {
        case .deleted(let identity):
            writer.text(identity.itemClass.rawValue)
            writer.number(UInt64(identity.key.count), width: 2)
            for value in identity.key { self.value(value, into: &writer) }
        case .item(let item):
            writer.raw(withUnsafeBytes(of: item.uuid.uuid) { Array($0) })
            writer.text(item.itemClass.rawValue)
            let attributes = item.attributes.sorted { $0.key.rawValue < $1.key.rawValue }
            writer.number(UInt64(attributes.count), width: 2)
            for (attribute, value) in attributes {
                writer.text(attribute.name)
                self.value(value, into: &writer)
            }
            let rows = item.freeform.sorted { $0.key < $1.key }
            writer.number(UInt64(rows.count), width: 2)
            for (name, value) in rows {
                writer.text(name)
                writer.text(value)
            }
            switch item.access {
            case .anyApplication: writer.byte(0)
            case .applications(let identities):
                writer.byte(1)
                writer.number(UInt64(identities.count), width: 2)
                for identity in identities { writer.text(identity) }
            }
            item.secret.withUnsafeBytes { writer.blob($0) }
        }
    }

    static func decode(from reader: inout ByteReader) throws(SyncRefusal) -> SyncRecord {
        let kind = try reader.byte()
        let version = try self.version(from: &reader)
        let base: SyncVersion? = switch try reader.byte() {
        case 0: nil
        case 1: try self.version(from: &reader)
        default: throw SyncRefusal("its base version is malformed")
        }
        let machineName = try reader.text(limit: SyncLimits.bytesPerMachineName)
        switch kind {
        case tombstoneKind:
            let itemClass = try self.itemClass(from: &reader)
            let count = Int(try reader.number(width: 2))
            guard count == itemClass.primaryKey.count else { throw SyncRefusal("a deletion names the wrong number of key values") }
            var key: [AttributeValue] = []
            for attribute in itemClass.primaryKey { key.append(try self.value(of: attribute, from: &reader)) }
            return SyncRecord(version: version, base: base, machineName: machineName,
                              change: .deleted(ItemIdentity(itemClass: itemClass, key: key)))
        case itemKind:
            let uuidBytes = Array(try reader.raw(16))
            let uuid = uuidBytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
            let itemClass = try self.itemClass(from: &reader)
            var attributes: [ItemAttribute: AttributeValue] = [:]
            let attributeCount = Int(try reader.number(width: 2))
            guard attributeCount <= ItemAttribute.allCases.count else { throw SyncRefusal("an item has too many attributes") }
            for _ in 0..<attributeCount {
                let name = try reader.text(limit: ServiceLimits.bytesPerAttributeName)
                guard let attribute = ItemAttribute.byName[name], attribute.belongs(to: itemClass), attributes[attribute] == nil else {
                    throw SyncRefusal("an item has an attribute its class lacks")
                }
                attributes[attribute] = try value(of: attribute, from: &reader)
            }
            // Every item's modification time is its version's: a record cannot claim two.
            guard attributes[.modificationDate] == .integer(version.modified) else {
                throw SyncRefusal("an item's modification time is not its version's")
            }
            let rowCount = Int(try reader.number(width: 2))
            guard rowCount <= ServiceLimits.attributesPerItem + FreeformItem.hiddenRows.count else {
                throw SyncRefusal("an item has more than \(ServiceLimits.attributesPerItem) Secret Service attributes")
            }
            var freeform: [String: String] = [:]
            for _ in 0..<rowCount {
                let name = try reader.text(limit: ServiceLimits.bytesPerAttributeName)
                guard freeform[name] == nil else { throw SyncRefusal("an item names one attribute twice") }
                freeform[name] = try reader.text(limit: ServiceLimits.bytesPerAttributeValue)
            }
            let access: AccessList
            switch try reader.byte() {
            case 0: access = .anyApplication
            case 1:
                let count = Int(try reader.number(width: 2))
                guard count <= AccessList.maxApplications else { throw SyncRefusal("an access list is too long") }
                var identities: [String] = []
                for _ in 0..<count { identities.append(try reader.text(limit: AccessList.maxIdentityBytes)) }
                do { access = try AccessList.validated(identities) } catch { throw SyncRefusal("an access list is malformed") }
            default: throw SyncRefusal("an access list is malformed")
            }
            let secretBytes = try reader.blob(limit: ServiceLimits.bytesPerSecret)
            let secret = secretBytes.withUnsafeBytes { SecretWipe.wipingData(copying: $0) }
            let item = SyncItem(uuid: uuid, itemClass: itemClass, attributes: attributes, freeform: freeform, access: access, secret: secret)
            return SyncRecord(version: version, base: base, machineName: machineName, change: .item(item))
        default:
            throw SyncRefusal("it holds a change of an unknown kind")
        }
    }

    private static func version(_ version: SyncVersion, into writer: inout ByteWriter) {
        writer.number(UInt64(bitPattern: version.modified), width: 8)
        writer.raw(version.machine.bytes)
    }

    private static func version(from reader: inout ByteReader) throws(SyncRefusal) -> SyncVersion {
        let modified = Int64(bitPattern: try reader.number(width: 8))
        return SyncVersion(modified: modified, machine: MachineID(bytes: Array(try reader.raw(MachineID.byteCount)))!)
    }

    private static func itemClass(from reader: inout ByteReader) throws(SyncRefusal) -> ItemClass {
        guard let itemClass = ItemClass(rawValue: try reader.text(limit: 16)) else { throw SyncRefusal("an item has an unknown class") }
        return itemClass
    }

    private static func value(_ value: AttributeValue, into writer: inout ByteWriter) {
        switch value {
        case .text(let text): writer.byte(UInt8(ascii: "t")); writer.text(text)
        case .integer(let number): writer.byte(UInt8(ascii: "i")); writer.number(UInt64(bitPattern: number), width: 8)
        case .bool(let flag): writer.byte(UInt8(ascii: "b")); writer.byte(flag ? 1 : 0)
        case .data(let bytes): writer.byte(UInt8(ascii: "d")); writer.blob(Array(bytes))
        }
    }

    /// A value checked as an Add's is (type, four-character codes, port range, `pdmn`).
    private static func value(of attribute: ItemAttribute, from reader: inout ByteReader) throws(SyncRefusal) -> AttributeValue {
        let limit = attribute == .label ? ServiceLimits.bytesPerLabel : ServiceLimits.bytesPerAttributeValue
        let wire: WireValue = switch try reader.byte() {
        case UInt8(ascii: "t"): .string(try reader.text(limit: limit))
        case UInt8(ascii: "i"): .integer(Int64(bitPattern: try reader.number(width: 8)))
        case UInt8(ascii: "b"): .bool(try reader.byte() != 0)
        case UInt8(ascii: "d"): .data(Data(try reader.blob(limit: limit)))
        default: throw SyncRefusal("an attribute has an unknown type")
        }
        if attribute.kind == .date {
            guard case .integer(let milliseconds) = wire else { throw SyncRefusal("a date is not a number") }
            return .integer(milliseconds)
        }
        do { return try attribute.parse(wire) } catch { throw SyncRefusal("attribute \(attribute.name) is invalid") }
    }
}
