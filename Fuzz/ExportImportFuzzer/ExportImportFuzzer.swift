import Foundation
import KeywellProtocol

@testable import KeywellCLI
@testable import KeywellCore

/// The files `keywell import` reads (docs/export-import.md): whoever hands a person a file
/// shapes every byte. The first byte picks:
///
/// 0: records sealed here into an export file under a known passphrase (the cheapest Argon2id),
///    inspected and imported into a real keychain: the file's item count comes back, every item
///    is added, replaced or skipped, or a known `KeychainError` is thrown; a correctly sealed file
///    is never called a wrong passphrase.
/// 1: an export file as found: its header is parsed; opened (with that passphrase) only when it
///    asks for the cheapest key derivation, so a file cannot make the run wait or allocate.
/// 2: one decrypted record: decoded or refused as malformed; a decoded record encodes to bytes
///    that decode to the same record.
/// 3: a CSV file: parsed or refused with its line; the records written back as CSV parse to the
///    same records; the header's layout and each row's attributes come out or are refused, and an
///    internet password's row written back gives the same attributes.

let passphrase = SecretBytes(copying: Array("fuzz passphrase".utf8))

/// A private folder on tmpfs when there is one, with a keychain to import into.
let workFolder: String = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    var template = Array("\(base)/keywell-export-fuzz-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
    return String(cString: made)
}()

let store: KeychainStore = {
    do {
        let store = try KeychainStore(
            paths: KeywellPaths(keychainsDirectory: URL(fileURLWithPath: workFolder + "/keychains"),
                                configDirectory: URL(fileURLWithPath: workFolder + "/config"),
                                runtimeDirectory: URL(fileURLWithPath: workFolder + "/run")),
            kdf: .fastForTests)
        _ = try store.registry.createKeychain("login", password: passphrase)
        return store
    } catch {
        fatalError("making the keychain: \(error)")
    }
}()

/// The export file's bytes live in one file, rewritten for each input (the importer reads a descriptor).
let exportFD: Int32 = {
    let fd = open(workFolder + "/export", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fatalError("open failed") }
    return fd
}()

// libFuzzer calls the target from one thread.
nonisolated(unsafe) var imports = 0

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    atexit { try? FileManager.default.removeItem(atPath: workFolder) }
    _ = store
    _ = exportFD
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 4 {
    case 0: sealedRecords(input, policy: [ImportPolicy.skip, .replace, .newer][Int(data[0] >> 2) % 3])
    case 1: exportFile(input)
    case 2: record(input)
    default: csv(input)
    }
    return 0
}

// MARK: Export files

func known(_ error: KeychainError, _ what: String) {
    guard SecStatus.name(for: error.status) != nil else { fatalError("\(what): unknown status \(error.status): \(error)") }
}

/// Records as 2-byte big-endian lengths and bytes; the last one carries the final tag.
func sealedRecords(_ input: [UInt8], policy: ImportPolicy) {
    var records: [[UInt8]] = []
    var offset = 0
    while input.count - offset >= 2, records.count < 64 {
        let length = min(Int(input[offset]) << 8 | Int(input[offset + 1]), input.count - offset - 2)
        records.append(Array(input[offset + 2..<offset + 2 + length]))
        offset += 2 + length
    }
    guard !records.isEmpty else { return }
    let file: [UInt8]
    do throws(KeychainError) {
        var writer = try ExportFile.Writer(passphrase: passphrase, kdf: .fastForTests)
        var bytes = writer.header
        for (index, record) in records.enumerated() { bytes += writer.seal(record, final: index == records.count - 1) }
        file = bytes
    } catch {
        fatalError("sealing: \(error)")
    }
    guard ftruncate(exportFD, 0) == 0, file.withUnsafeBytes({ pwrite(exportFD, $0.baseAddress, $0.count, 0) }) == file.count else {
        fatalError("writing the export file failed")
    }
    let items = records.filter { $0.first == ExportRecord.itemKind }.count
    let inspected: (keychains: [String], itemCount: Int)
    do throws(KeychainError) {
        inspected = try store.transfer.inspectExport(from: exportFD, passphrase: passphrase)
    } catch {
        guard error.status != SecStatus.authFailed else { fatalError("a correctly sealed file read as a wrong passphrase") }
        known(error, "inspecting")
        return
    }
    guard inspected.itemCount == items else { fatalError("\(inspected.itemCount) items of \(items)") }
    do throws(KeychainError) {
        let summary = try store.transfer.importExport(from: exportFD, passphrase: passphrase, into: "login", policy: policy)
        guard summary.added + summary.replaced + summary.skipped == items else { fatalError("\(summary) for \(items) items") }
    } catch {
        known(error, "importing")
    }
    // A fresh keychain now and then keeps each import's cost about the same.
    imports += 1
    if imports % 512 == 0 {
        do throws(KeychainError) {
            try store.registry.deleteKeychain("login")
            _ = try store.registry.createKeychain("login", password: passphrase)
        } catch {
            fatalError("renewing the keychain: \(error)")
        }
    }
}

func exportFile(_ input: [UInt8]) {
    let header: ExportFile.Header
    do throws(KeychainError) {
        header = try ExportFile.parseHeader(input)
    } catch {
        guard error.status == SecStatus.decode else { fatalError("a header refused with \(error.status)") }
        return
    }
    guard header.kdf == .fastForTests else { return }
    do throws(KeychainError) {
        _ = try ExportFile.open(input, passphrase: passphrase)
    } catch {
        known(error, "opening")
    }
}

func record(_ input: [UInt8]) {
    let decoded: ExportRecord.Decoded
    do throws(KeychainError) {
        decoded = try ExportRecord.decode(Data(input), keychain: "fuzz")
    } catch {
        guard error.status == SecStatus.decode else { fatalError("a record refused with \(error.status)") }
        return
    }
    switch decoded {
    case .keychain(let name):
        guard ExportRecord.keychain(name) == input else { fatalError("a keychain record encodes differently") }
    case .end(let count):
        guard count == Int.max || ExportRecord.end(itemCount: count) == input else { fatalError("an end record encodes differently") }
    case .item(let item):
        let encoded = ExportRecord.item(item)
        guard case .item(let again)? = try? ExportRecord.decode(Data(encoded), keychain: "fuzz"),
              ExportRecord.item(again) == encoded else { fatalError("an item record does not decode to itself") }
    }
}

// MARK: CSV

func csv(_ input: [UInt8]) {
    let records: [[[UInt8]]]
    do throws(CSVTable.Failure) {
        records = try CSVTable.parse(input)
    } catch {
        return
    }
    // Written back (behind a byte-order mark, which the parser skips, so that a first field
    // starting with one survives), the records parse the same; a lone empty field is a blank line.
    let kept = records.filter { !($0.count == 1 && $0[0].isEmpty) }
    let written = [0xEF, 0xBB, 0xBF] + kept.flatMap(CSVTable.line)
    guard (try? CSVTable.parse(written)) == kept else { fatalError("CSV records do not round-trip") }

    guard let header = records.first,
          let layout = CSVLayout(header: header.map { String(decoding: $0, as: UTF8.self) }) else { return }
    for record in records.dropFirst().prefix(64) {
        func field(_ column: Int?) -> String {
            guard let column, column < record.count else { return "" }
            return String(decoding: record[column], as: UTF8.self)
        }
        let entry = CSVMapping.Entry(name: field(layout.name), url: field(layout.url), username: field(layout.username),
                                     note: field(layout.note), realm: field(layout.realm))
        guard let attributes = try? CSVMapping.attributes(for: entry),
              attributes[WireKey.class] == .string(WireKey.classInternetPassword) else { continue }
        // The row this internet password exports as gives it back (the realm is not a column).
        let row = CSVMapping.row(attributes, secret: [])
        let again = CSVMapping.Entry(name: String(decoding: row[0], as: UTF8.self), url: String(decoding: row[1], as: UTF8.self),
                                     username: String(decoding: row[2], as: UTF8.self), note: String(decoding: row[4], as: UTF8.self))
        var expected = attributes
        expected[AttributeKey.securityDomain] = nil
        guard (try? CSVMapping.attributes(for: again)) == expected else {
            fatalError("an internet password's row does not round-trip: \(attributes)")
        }
    }
}
