import COpenSSL
import KeywellCore
import KeywellProtocol

@testable import KeyringImport

/// The keyring files `keywell migrate` reads from a user's home (docs/migration.md): the first
/// byte picks the reader, the rest is its input.
///
/// 0: a gnome-keyring binary file as found; 1: a gnome-keyring binary file whose encrypted block
/// is the rest, sealed here under the fuzz password (so the items behind the MD5 check are
/// reached); 2: gnome-keyring's plaintext key file; 3: a libsecret file as found; 4: a libsecret
/// item's decrypted GVariant; 5: a KWallet file's readable part; 6: a KWallet file's decrypted
/// QDataStream; 7: a KWallet file whose encrypted part is that stream, sealed here with KWallet's
/// Blowfish-CBC and SHA-1 under a fixed key; 8: a KWallet file as found, opened with that key;
/// 9: a GPG wallet's plaintext (no gpg runs here: the header is case 5's, the OpenPGP message is
/// gpg's to read).
///
/// Each reader returns contents or throws its documented error (`KeyringReadError`, or
/// `GVariantReader.Failure` inside an item), never crashes, and keeps to `KeyringLimits`. A
/// gnome-keyring binary file it reads is written back with `GnomeKeyringWriter` and reads as the
/// same items; a block sealed with the right password never reads as a wrong password, and a
/// sealed KWallet stream reads as the same entries the stream gives unsealed.

let password = SecretBytes(copying: Array("fuzz".utf8))
let salt = [UInt8](repeating: 0x5a, count: 8)
/// The readers allow up to a million key-derivation rounds (about a second of work): the fuzzer
/// lets through gnome-keyring files asking for as many SHA-256 rounds as gnome-keyring writes
/// (1000...4095, about a millisecond) and libsecret files asking for a few PBKDF2 rounds (it
/// writes 100 000), and stops the others at their header.
let maximumHashRounds: UInt32 = 4096
let maximumPBKDF2Rounds: UInt32 = 16

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 10 {
    case 0: gnomeKeyringFile(input)
    case 1: sealedGnomeKeyringFile(input)
    case 2: plaintextKeyFile(input)
    case 3: libsecretFile(input)
    case 4: libsecretItem(input)
    case 5: kwalletFile(input)
    case 6: kwalletData(input)
    case 7: sealedKWalletFile(input)
    case 8: _ = try? KWalletFile.read(input, key: kwalletKey, keyring: "fuzz", modified: 7)
    default: gpgWalletPlaintext(input)
    }
    return 0
}

// MARK: gnome-keyring

/// The hash rounds a binary file asks for; 0 when the header ends first (the reader then refuses
/// it before deriving anything).
func binaryRounds(_ bytes: [UInt8]) -> UInt32 {
    bytes.withUnsafeBytes { buffer in
        guard buffer.count >= 20 else { return 0 }
        var reader = ByteReader(buffer, at: 20, keyring: "fuzz")
        do throws(KeyringReadError) {
            _ = try reader.byteArray("label")
            for _ in 0..<6 { _ = try reader.uint32("times, flags, timeout") }
            return try reader.uint32("rounds")
        } catch {
            return 0
        }
    }
}

func gnomeKeyringFile(_ input: [UInt8]) {
    _ = GnomeKeyringBinary.matches(input)
    guard binaryRounds(input) <= maximumHashRounds else { return }
    if let contents = try? GnomeKeyringBinary.read(input, keyring: "fuzz", password: password) {
        checkLimits(contents)
        writtenBackReadsTheSame(contents)
    }
}

/// The rest as the plaintext of an encrypted block (its MD5 in front, zero-filled to AES
/// blocks), behind a header naming `count` items.
func sealedGnomeKeyringFile(_ input: [UInt8]) {
    guard let first = input.first else { return }
    let count = Int(first % 8)
    var header = ByteWriter()
    header.bytes = GnomeKeyringBinary.magic + [0, 0, 0, 0]
    header.string("fuzz")
    header.time(0)
    header.time(0)
    header.uint32(0)
    header.uint32(0)
    header.uint32(1)
    header.bytes += salt
    for _ in 0..<4 { header.uint32(0) }
    header.uint32(UInt32(count))
    for index in 0..<count {
        header.uint32(UInt32(index + 1))
        header.uint32(UInt32(first >> 3))  // the item type: a known one or not
        header.uint32(0)  // no hashed attributes
    }
    var plain = [UInt8](repeating: 0, count: 16) + input.dropFirst()
    while plain.count % 16 != 0 { plain.append(0) }
    let check = plain.withUnsafeBytes { KeyringCrypto.md5(UnsafeRawBufferPointer(rebasing: $0[16...])) }
    plain.replaceSubrange(0..<16, with: check)
    let encrypted = sealingKey.withUnsafeBytes { kv in
        plain.withUnsafeBytes {
            KeyringCrypto.aes128CBC(encrypt: true, key: UnsafeRawBufferPointer(rebasing: kv[0..<16]),
                                    iv: UnsafeRawBufferPointer(rebasing: kv[16..<32]), $0)!
        }
    }
    header.uint32(UInt32(encrypted.count))
    encrypted.withUnsafeBytes { header.bytes += $0 }
    do throws(KeyringReadError) {
        let contents = try GnomeKeyringBinary.read(header.bytes, keyring: "fuzz", password: password)
        guard contents.items.count == count else { fatalError("\(contents.items.count) items read of \(count)") }
        checkLimits(contents)
        writtenBackReadsTheSame(contents)
    } catch {
        switch error {
        case .corrupt, .tooLarge: break
        default: fatalError("a correctly sealed block read as \(error)")
        }
    }
}

/// Key and IV for the fuzz password, the salt and one round: derived once.
let sealingKey = KeyringCrypto.iteratedSHA256(password: password, salt: salt, iterations: 1)

func plaintextKeyFile(_ input: [UInt8]) {
    _ = GnomeKeyringText.matches(input)
    if let contents = try? GnomeKeyringText.read(input, keyring: "fuzz") {
        guard contents.format == .gnomeKeyringPlaintext else { fatalError("the wrong format") }
        checkLimits(contents)
    }
}

/// What the writer makes of a binary file's items reads as the same items: labels, attributes,
/// secrets and times; the writer keeps a schema as gnome-keyring's numeric type (Generic for
/// none).
func writtenBackReadsTheSame(_ contents: KeyringContents) {
    let items = contents.items.map { item in
        GnomeKeyringWriter.Item(id: UInt32(item.identity.dropFirst("id:".count))!, label: item.label, attributes: item.attributes,
                                schema: item.schema, secret: item.secret, created: item.created, modified: item.modified)
    }
    let written = GnomeKeyringWriter.write(label: contents.label, created: contents.created, modified: contents.modified,
                                           items: items, password: password)
    let again: KeyringContents
    do throws(KeyringReadError) {
        again = try GnomeKeyringBinary.read(written, keyring: "fuzz", password: password)
    } catch {
        fatalError("a written file does not read: \(error)")
    }
    guard again.label == contents.label, again.created == contents.created, again.modified == contents.modified,
          again.items.count == contents.items.count else { fatalError("the keyring's fields changed in a round trip") }
    for (before, after) in zip(contents.items, again.items) {
        let schema = before.schema ?? (before.attributes[GnomeKeyringBinary.schemaAttribute] == nil
                                       ? GnomeKeyringBinary.schema(forItemType: 0) : nil)
        guard before.identity == after.identity, before.label == after.label, before.attributes == after.attributes,
              schema == after.schema, bytes(before.secret) == bytes(after.secret), before.created == after.created,
              before.modified == after.modified else { fatalError("item \(before.identity) changed in a round trip") }
    }
}

// MARK: libsecret

/// The PBKDF2 rounds a libsecret file asks for; 0 when its top tuple does not read.
func libsecretRounds(_ bytes: [UInt8]) -> UInt32 {
    guard bytes.count >= 18 else { return 0 }
    return bytes.withUnsafeBytes { buffer in
        let body = UnsafeRawBufferPointer(rebasing: buffer[18...])
        guard let top = try? GVariantReader(body).tuple([.uint32, .variable, .uint32, .uint64, .uint32, .variable]) else { return 0 }
        return (try? top[2].uint32()) ?? 0
    }
}

func libsecretFile(_ input: [UInt8]) {
    _ = LibsecretFile.matches(input)
    guard libsecretRounds(input) <= maximumPBKDF2Rounds else { return }
    if let contents = try? LibsecretFile.read(input, keyring: "fuzz", password: password) {
        guard contents.format == .libsecretFile else { fatalError("the wrong format") }
        checkLimits(contents)
    }
}

func libsecretItem(_ input: [UInt8]) {
    let item = input.withUnsafeBytes { buffer in
        Result { () throws(GVariantReader.Failure) in try LibsecretFile.item(decrypted: buffer) }
    }
    if case .success(let item) = item {
        guard item.attributes.count <= KeyringLimits.maximumAttributesPerItem else { fatalError("over the attribute cap") }
        guard item.identity == "attributes:" + LibsecretFile.identity(of: item.attributes) else { fatalError("an unstable identity") }
    }
}

// MARK: KWallet

/// The part readable without the password; opening it needs 50 000 rounds of PBKDF2, which is
/// kwalletd's fixed cost and too slow to fuzz.
func kwalletFile(_ input: [UInt8]) {
    let matches = KWalletFile.matches(input)
    do throws(KeyringReadError) {
        try KWalletFile.checkStructure(input, keyring: "fuzz")
        guard matches else { fatalError("a file that does not match passed the structure check") }
    } catch {
        switch error {
        case .corrupt, .tooLarge, .unrecognized: break
        default: fatalError("the structure check said \(error)")
        }
    }
}

/// Folders and entries as the decrypted stream holds them: every entry an item with KWallet's
/// four attributes, each (folder, key) once.
func kwalletData(_ input: [UInt8]) {
    let read = input.withUnsafeBytes { buffer in
        Result { () throws(KeyringReadError) in try KWalletFile.entries(ByteReader(buffer, keyring: "fuzz"), modified: 7) }
    }
    switch read {
    case .success(let items):
        guard items.count <= KeyringLimits.maximumItems else { fatalError("over the item cap") }
        guard Set(items.map(\.identity)).count == items.count else { fatalError("an entry twice") }
        for item in items {
            guard item.attributes[KWalletProtocol.folderAttribute] != nil, item.attributes[KWalletProtocol.keyAttribute] != nil,
                  ["plaintext", "base64", "map"].contains(item.attributes[KWalletProtocol.typeAttribute]),
                  item.created == 7, item.modified == 7 else { fatalError("an entry without its attributes") }
        }
    case .failure(let error):
        switch error {
        case .corrupt, .tooLarge: break
        default: fatalError("the stream said \(error)")
        }
    }
}

/// A GPG wallet's plaintext, handed to the reader as gpg would hand it: the same entries the
/// values stream alone gives, or a documented error.
func gpgWalletPlaintext(_ input: [UInt8]) {
    let header = KWalletFile.magic + [0, 1] + KWalletFile.gpgCipherAndHash + [0x85]
    let read = Result { () throws(KeyringReadError) in
        try KWalletFile.readGPG(header, keyring: "fuzz", modified: 7) { _ throws(KeyringReadError) in SecretBytes(copying: input) }
    }
    switch read {
    case .success(let contents):
        checkLimits(contents)
        guard Set(contents.items.map(\.identity)).count == contents.items.count else { fatalError("an entry twice") }
    case .failure(let error):
        switch error {
        case .corrupt, .tooLarge: break
        default: fatalError("a GPG wallet's plaintext said \(error)")
        }
    }
}

/// A KWallet key (56 bytes, as PBKDF2 gives them): fixed, so no derivation per input.
let kwalletKey = SecretBytes(copying: (0..<KWalletBlowfish.keySize).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })

/// The stream sealed as kwalletd writes it: a random block (fixed here), its size, the stream,
/// fill to whole blocks with KWallet's SHA-1 of the stream last, Blowfish-CBC from a zero IV.
func sealedKWalletFile(_ stream: [UInt8]) {
    var plain = [UInt8](repeating: 0x11, count: KWalletBlowfish.blockSize)
    let size = UInt32(stream.count)
    plain += [UInt8(size >> 24), UInt8(size >> 16 & 0xff), UInt8(size >> 8 & 0xff), UInt8(size & 0xff)] + stream
    while (plain.count + KWalletFile.sha1Size) % KWalletBlowfish.blockSize != 0 { plain.append(0) }
    plain += stream.withUnsafeBytes { KWalletBlowfish.littleEndianSHA1($0) }
    let file = KWalletFile.magic + KWalletFile.supportedVersion + [0, 0, 0, 0] + blowfishCBC(plain)
    let sealed = Result { () throws(KeyringReadError) in try KWalletFile.read(file, key: kwalletKey, keyring: "fuzz", modified: 7) }
    let direct = stream.withUnsafeBytes { buffer in
        Result { () throws(KeyringReadError) in try KWalletFile.entries(ByteReader(buffer, keyring: "fuzz"), modified: 7) }
    }
    switch (sealed, direct) {
    case (.success(let contents), .success(let items)):
        guard contents.items.count == items.count else { fatalError("sealing changed the entries") }
        for (a, b) in zip(contents.items, items) where a.identity != b.identity || a.attributes != b.attributes || bytes(a.secret) != bytes(b.secret) {
            fatalError("sealing changed entry \(a.identity)")
        }
    case (.failure(let a), .failure(let b)):
        guard a == b else { fatalError("sealed: \(a); unsealed: \(b)") }
    default:
        fatalError("sealed and unsealed streams read differently: \(sealed), \(direct)")
    }
}

/// Blowfish-CBC encryption (OpenSSL's legacy provider), the inverse of `KWalletBlowfish.decrypt`.
func blowfishCBC(_ plain: [UInt8]) -> [UInt8] {
    guard let library = OSSL_LIB_CTX_new(), let legacy = OSSL_PROVIDER_load(library, "legacy"),
          let cipher = EVP_CIPHER_fetch(library, "BF-ECB", nil), let context = EVP_CIPHER_CTX_new() else {
        fatalError("OpenSSL's legacy provider (Blowfish) is missing")
    }
    defer {
        EVP_CIPHER_CTX_free(context)
        EVP_CIPHER_free(cipher)
        OSSL_PROVIDER_unload(legacy)
        OSSL_LIB_CTX_free(library)
    }
    let keyed = kwalletKey.withUnsafeBytes { key in
        EVP_EncryptInit_ex(context, cipher, nil, nil, nil) == 1
            && EVP_CIPHER_CTX_set_key_length(context, Int32(KWalletBlowfish.keySize)) == 1
            && EVP_EncryptInit_ex(context, nil, nil, key.baseAddress!.assumingMemoryBound(to: UInt8.self), nil) == 1
            && EVP_CIPHER_CTX_set_padding(context, 0) == 1
    }
    guard keyed else { fatalError("Blowfish key set-up failed") }
    var out: [UInt8] = []
    var previous = [UInt8](repeating: 0, count: KWalletBlowfish.blockSize)
    for start in stride(from: 0, to: plain.count, by: KWalletBlowfish.blockSize) {
        let block = (0..<KWalletBlowfish.blockSize).map { plain[start + $0] ^ previous[$0] }
        var encrypted = [UInt8](repeating: 0, count: KWalletBlowfish.blockSize)
        var written: Int32 = 0
        guard EVP_EncryptUpdate(context, &encrypted, &written, block, Int32(block.count)) == 1,
              written == Int32(KWalletBlowfish.blockSize) else { fatalError("Blowfish failed") }
        out += encrypted
        previous = encrypted
    }
    return out
}

// MARK: Shared

func checkLimits(_ contents: KeyringContents) {
    guard contents.items.count <= KeyringLimits.maximumItems else { fatalError("over the item cap") }
    for item in contents.items where item.attributes.count > KeyringLimits.maximumAttributesPerItem {
        fatalError("over the attribute cap")
    }
}

func bytes(_ secret: SecretBytes) -> [UInt8] { secret.withUnsafeBytes { Array($0) } }
