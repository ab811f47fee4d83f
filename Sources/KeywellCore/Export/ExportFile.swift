import CSodium
import Foundation
import KeywellProtocol

/// The encrypted export file (docs/export-import.md, "File format"): a plaintext header, then
/// records sealed one by one with libsodium's secretstream (XChaCha20-Poly1305) under a key
/// Argon2id derives from the passphrase. The last record carries the final tag, so a file cut
/// anywhere fails to open; the header is the first record's associated data, so it cannot be
/// edited either.
enum ExportFile {
    static let magic = Array("KWEXPORT".utf8)
    static let version: UInt16 = 1
    static let argon2id: UInt8 = 2
    static let streamHeaderLength = Int(crypto_secretstream_xchacha20poly1305_headerbytes())
    static let sealOverhead = Int(crypto_secretstream_xchacha20poly1305_abytes())
    /// magic, version, flags, algorithm, opslimit, memlimit, salt, stream header.
    static let headerLength = 8 + 2 + 2 + 1 + 4 + 8 + 16 + streamHeaderLength
    static let finalTag = UInt8(crypto_secretstream_xchacha20poly1305_tag_final())
    static let messageTag = UInt8(crypto_secretstream_xchacha20poly1305_tag_message())

    /// Seals records in order; `finish` seals the last one with the final tag.
    struct Writer {
        private var state: crypto_secretstream_xchacha20poly1305_state
        private var associatedData: [UInt8]
        /// The header, to be written first.
        let header: [UInt8]

        init(passphrase: SecretBytes, kdf: KDFParameters) throws(KeychainError) {
            let salt = Sodium.randomData(count: Sodium.saltLength)
            let key = try Sodium.deriveKey(password: passphrase, salt: salt, parameters: kdf)
            var streamHeader = [UInt8](repeating: 0, count: ExportFile.streamHeaderLength)
            var state = crypto_secretstream_xchacha20poly1305_state()
            key.withUnsafeBytes { keyBytes in
                _ = crypto_secretstream_xchacha20poly1305_init_push(
                    &state, &streamHeader, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            self.state = state
            header = ExportFile.header(kdf: kdf, salt: Array(salt), streamHeader: streamHeader)
            associatedData = header
        }

        /// One chunk: the sealed record's length (4 bytes, big-endian), then the sealed record.
        mutating func seal(_ record: [UInt8], final: Bool = false) -> [UInt8] {
            var chunk = [UInt8](repeating: 0, count: 4 + record.count + ExportFile.sealOverhead)
            let sealedLength = UInt32(record.count + ExportFile.sealOverhead)
            for index in 0..<4 { chunk[index] = UInt8(truncatingIfNeeded: sealedLength >> (24 - 8 * UInt32(index))) }
            chunk.withUnsafeMutableBufferPointer { out in
                _ = crypto_secretstream_xchacha20poly1305_push(
                    &state, out.baseAddress! + 4, nil, record, UInt64(record.count),
                    associatedData, UInt64(associatedData.count), final ? ExportFile.finalTag : ExportFile.messageTag)
            }
            // Only the first record is bound to the header.
            associatedData = []
            return chunk
        }
    }

    /// Every record of a whole file, in order, the final one included; throws without returning
    /// any when the passphrase is wrong or anything in the file was changed, cut or added.
    /// Records are wiped when the caller's copies go (`SecretWipe`).
    static func open(_ file: [UInt8], passphrase: SecretBytes) throws(KeychainError) -> [Data] {
        guard file.count <= ExportLimits.bytesPerFile else {
            throw KeychainError(SecStatus.dataTooLarge, detail: "export files hold at most \(ExportLimits.bytesPerFile >> 20) MiB")
        }
        let header = try parseHeader(file)
        let key = try Sodium.deriveKey(password: passphrase, salt: Data(header.salt), parameters: header.kdf)
        var state = crypto_secretstream_xchacha20poly1305_state()
        let started = key.withUnsafeBytes { keyBytes in
            crypto_secretstream_xchacha20poly1305_init_pull(
                &state, header.streamHeader, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard started == 0 else { throw damaged("its stream header is invalid") }
        var records: [Data] = []
        var offset = headerLength
        var sawFinal = false
        while offset < file.count {
            guard !sawFinal else { throw damaged("it has bytes after its last record") }
            guard file.count - offset >= 4 else { throw truncated() }
            let length = file[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard length >= sealOverhead, length - sealOverhead <= ExportLimits.bytesPerRecord else {
                throw damaged("a record's length is impossible")
            }
            guard file.count - offset >= length else { throw truncated() }
            var tag: UInt8 = 0
            let associatedData = records.isEmpty ? Array(file[0..<headerLength]) : []
            let record = file.withUnsafeBufferPointer { input in
                SecretWipe.wipingData(count: length - sealOverhead) { output in
                    crypto_secretstream_xchacha20poly1305_pull(
                        &state, output.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, &tag,
                        input.baseAddress! + offset, UInt64(length), associatedData, UInt64(associatedData.count)) == 0
                }
            }
            guard let record else {
                if records.isEmpty {
                    throw KeychainError(SecStatus.authFailed, detail: "wrong passphrase, or the export file was altered")
                }
                throw damaged("record \(records.count + 1) fails to authenticate")
            }
            guard tag == messageTag || tag == finalTag else { throw damaged("a record has an unknown tag") }
            sawFinal = tag == finalTag
            records.append(record)
            offset += length
        }
        guard sawFinal else { throw truncated() }
        return records
    }

    struct Header {
        let kdf: KDFParameters
        let salt: [UInt8]
        let streamHeader: [UInt8]
    }

    static func header(kdf: KDFParameters, salt: [UInt8], streamHeader: [UInt8]) -> [UInt8] {
        var bytes = magic
        append(&bytes, UInt64(version), width: 2)
        append(&bytes, 0, width: 2)
        bytes.append(argon2id)
        append(&bytes, UInt64(kdf.opsLimit), width: 4)
        append(&bytes, UInt64(kdf.memLimit), width: 8)
        return bytes + salt + streamHeader
    }

    static func parseHeader(_ file: [UInt8]) throws(KeychainError) -> Header {
        guard file.count >= magic.count, Array(file[0..<magic.count]) == magic else {
            throw KeychainError(SecStatus.decode, detail: "not a Keywell export file")
        }
        guard file.count >= headerLength else { throw truncated() }
        func number(_ at: Int, _ width: Int) -> Int { file[at..<at + width].reduce(0) { $0 << 8 | Int($1) } }
        guard number(8, 2) == Int(version) else {
            throw KeychainError(SecStatus.decode, detail: "export file version \(number(8, 2)); this Keywell reads version \(version)")
        }
        guard number(10, 2) == 0, file[12] == argon2id else { throw damaged("its header has unknown flags or algorithm") }
        let kdf = KDFParameters(opsLimit: number(13, 4), memLimit: number(17, 8))
        guard kdf.isUsable else { throw damaged("its key-derivation parameters are out of range") }
        return Header(kdf: kdf, salt: Array(file[25..<41]), streamHeader: Array(file[41..<headerLength]))
    }

    private static func append(_ bytes: inout [UInt8], _ value: UInt64, width: Int) {
        for index in (0..<width).reversed() { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    private static func damaged(_ why: String) -> KeychainError {
        KeychainError(SecStatus.decode, detail: "the export file is damaged or was altered: \(why)")
    }

    private static func truncated() -> KeychainError {
        KeychainError(SecStatus.decode, detail: "the export file is truncated")
    }
}
