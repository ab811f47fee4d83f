import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSync

let machineA = MachineID(hex: String(repeating: "a", count: 32))!
let machineB = MachineID(hex: String(repeating: "b", count: 32))!

/// A generic password as a record carries it.
func genericItem(account: String = "alice", service: String = "mail.example", secret: String = "hunter2", modified: Int64,
                 label: String = "Mail") -> SyncItem {
    SyncItem(
        uuid: UUID(), itemClass: .genericPassword,
        attributes: [
            .account: .text(account), .service: .text(service), .label: .text(label), .accessGroup: .text(""),
            .accessibility: .text("ak"), .creationDate: .integer(1), .modificationDate: .integer(modified),
        ],
        freeform: ["xdg:schema": "org.example.Mail"], access: .applications(["exe:/usr/bin/mutt"]),
        secret: Data(secret.utf8))
}

func change(_ item: SyncItem, by machine: MachineID, base: SyncVersion? = nil) -> SyncRecord {
    guard case .integer(let modified)? = item.attributes[.modificationDate] else { fatalError("no mdat") }
    return SyncRecord(version: SyncVersion(modified: modified, machine: machine), base: base, machineName: "host-\(machine.hex.prefix(4))",
                      change: .item(item))
}

func deletion(of item: SyncItem, at modified: Int64, by machine: MachineID, base: SyncVersion?) -> SyncRecord {
    SyncRecord(version: SyncVersion(modified: modified, machine: machine), base: base, machineName: "host",
               change: .deleted(item.identity))
}
