import KeywellNativeClient
import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `dump-keychain [-adir] [keychain...]`: every item of the keychains (default: the search list)
/// as item blocks; `-d` adds each secret. One item that cannot be read gets an error line after
/// its header and the dump goes on (exit 0); only a failed search exits 1.
enum DumpKeychainCommand {
    /// An item whose secret moves into locked memory only when it is printed: one
    /// `SecretBytes` per item held at once would need several mappings each, and a large
    /// keychain would run out of them.
    private struct Entry {
        var item: FoundItem
        var secretFailure: OSStatus?
        var pendingSecret: PendingSecret?
    }

    private enum PendingSecret {
        /// From the reply, wiped once moved.
        case data(Data)
        /// Read alone (by its persistent reference) when printed.
        case fetch
    }

    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        // -i edits access lists interactively; Keywell has no such editor (-a prints them).
        if invocation.has("i") { return CommandStatus.usage }
        if let file = invocation.value("o") {
            // Hidden `-o file`: the dump goes to the file (0600: it may hold secrets).
            let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                context.diagnostics.error("\(file): \(Errno.current.description)")
                return CommandStatus.failure
            }
            context.output.flush()
            dup2(fd, 1)
            close(fd)
        }
        let withData = invocation.has("d"), withRaw = invocation.has("r"), withAccess = invocation.has("a")
        let wantsSecret = withData || withRaw
        let explicit = !invocation.operands.isEmpty
        let search = ItemSearch(context: context)
        let scope: [String]
        do {
            scope = try search.scope(invocation.operands)
        } catch {
            // security only creates the search, which reads the search list.
            context.diagnostics.perror("SecKeychainSearchCreateFromAttributes", error.status)
            context.diagnostics.hint(for: error.status, keychain: nil)
            return CommandStatus.failure
        }

        var json: [JSONValue] = []
        for keychain in scope {
            let path = context.naming.path(for: keychain)
            for itemClass in [ItemClass.genericPassword, .internetPassword, .key] {
                let entries: [Entry]
                do {
                    entries = try items(itemClass, in: keychain, secrets: wantsSecret, access: withAccess,
                                        secretService: invocation.json, search: search)
                } catch {
                    if error.status == SecStatus.noSuchKeychain && !explicit { break }
                    context.diagnostics.perror("SecKeychainSearchCreateFromAttributes", error.status)
                    context.diagnostics.hint(for: error.status, keychain: context.naming.displayName(for: keychain))
                    return CommandStatus.failure
                }
                for var entry in entries {
                    switch entry.pendingSecret {
                    case .data(var data)?:
                        entry.pendingSecret = nil
                        entry.item.secret = SecretBytes(wiping: &data)
                    case .fetch?:
                        do throws(KeychainError) {
                            entry.item.secret = try search.secret(of: entry.item)
                        } catch {
                            entry.secretFailure = error.status
                        }
                    case nil: break
                    }
                    defer { entry.item.secret?.wipe() }
                    if invocation.json {
                        json.append(ItemJSON.item(entry.item, keychainPath: path, includeSecret: wantsSecret,
                                                  includeAccess: withAccess, error: entry.secretFailure.map(SecStatus.message)))
                        continue
                    }
                    context.output.write(ItemRendering.header(entry.item, keychainPath: path))
                    if let status = entry.secretFailure {
                        context.output.flush()
                        context.diagnostics.perror("SecKeychainItemCopyAttributesAndData", status)
                        if withAccess { context.output.write(ItemRendering.accessLines(entry.item)) }
                        continue
                    }
                    context.output.write(ItemRendering.attributeLines(entry.item))
                    if let secret = entry.item.secret {
                        if withData { secret.withArray { context.output.writeSecret(Array(ItemRendering.dataLines($0).utf8)) } }
                        // Keywell keeps no encrypted blob outside its database, so "raw" is the
                        // secret's bytes as they are [D].
                        if withRaw { secret.withArray { context.output.writeSecret(Array("raw data:\n".utf8) + $0 + [0x0A]) } }
                    }
                    if withAccess { context.output.write(ItemRendering.accessLines(entry.item)) }
                }
            }
        }
        if invocation.json { JSONOutput.write(.array(json), to: context.output) }
        return CommandStatus.success
    }

    /// All items of one class in one keychain; with `secrets`, each with its secret or the
    /// reason it could not be read.
    private static func items(_ itemClass: ItemClass, in keychain: String, secrets: Bool, access: Bool, secretService: Bool,
                              search: ItemSearch) throws(KeychainError) -> [Entry] {
        let client = search.context.client
        func fetch(withSecrets: Bool) throws(KeychainError) -> [WireDictionary] {
            var query = search.query(itemClass, [:], in: keychain, secret: withSecrets, all: true, access: access)
            // --json shows every free-form (Secret Service) attribute too.
            if secretService { query[WireKey.returnSecretServiceAttributes] = .bool(true) }
            do {
                return try client.copyMatching(query)
            } catch where error.status == SecStatus.itemNotFound {
                return []
            }
        }
        if secrets {
            do {
                return try fetch(withSecrets: true).map { result in
                    var attributes = result
                    let data = attributes.removeValue(forKey: WireKey.valueData)?.dataValue ?? .init()
                    return Entry(item: FoundItem(itemClass: itemClass, keychain: keychain, result: attributes, secret: nil),
                                 pendingSecret: .data(data))
                }
            } catch where error.status != SecStatus.noSuchKeychain {
                // Locked, or one item that will not open: take the attributes, then each
                // secret alone so that one bad item does not hide the others.
                let locked = error.status == SecStatus.interactionNotAllowed
                return try fetch(withSecrets: false).map { result in
                    var entry = Entry(item: FoundItem(itemClass: itemClass, keychain: keychain, result: result, secret: nil))
                    if locked { entry.secretFailure = error.status } else { entry.pendingSecret = .fetch }
                    return entry
                }
            }
        }
        return try fetch(withSecrets: false).map { result in
            Entry(item: FoundItem(itemClass: itemClass, keychain: keychain, result: result, secret: nil))
        }
    }
}
