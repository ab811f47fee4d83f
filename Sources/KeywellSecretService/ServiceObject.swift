import Foundation
import KeywellAccess
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import SecretServiceCrypto

/// `/org/freedesktop/secrets`: `org.freedesktop.Secret.Service`.
struct ServiceObject: ServiceMethods {
    let context: ServiceContext

    func openSession(algorithm: String, input: DBusValue, call: CallContext) throws(DBusError) -> (output: DBusValue, result: String) {
        let (output, session) = try context.sessions.open(algorithm: algorithm, input: input, owner: call.sender)
        return (output, session.path)
    }

    func createCollection(properties: DBusValue, alias: String, call: CallContext) throws(DBusError) -> (collection: String, prompt: String) {
        try createCollection(PropertyDictionary(properties, of: SecretServiceInterfaces.collection), alias: alias, call: call)
    }

    func lock(objects: [String], call: CallContext) throws(DBusError) -> (locked: [String], prompt: String) {
        (try lock(objects, call: call), SecretServiceNames.noObject)
    }

    func lockService(call: CallContext) throws(DBusError) {
        context.store.locking.lockAll()
    }

    func getSecrets(items: [String], session: String, call: CallContext) throws(DBusError) -> DBusWrittenValue {
        let session = try context.sessions.session(at: session, for: call.sender)
        call.replyMayHoldSecrets = !session.isEncrypted
        return try secrets(of: items, for: session, call: call)
    }

    func readAlias(name: String, call: CallContext) throws(DBusError) -> String {
        context.directory.collection(ofAlias: name).map { ObjectPaths.path(of: $0.id) } ?? SecretServiceNames.noObject
    }

    func setAlias(name: String, collection: String, call: CallContext) throws(DBusError) {
        try setAlias(name, to: collection)
    }

    func property(_ name: String) throws(DBusError) -> DBusValue {
        guard name == SecretServiceProtocol.Property.collections else { throw .unknownProperty("No property \(name)") }
        return .objectPathArray(context.directory.allIDs().map(ObjectPaths.path(of:)))
    }

    // MARK: Searching and secrets

    /// Every collection's matches, split by lock state: attributes stay readable while a keychain
    /// is locked, so its matches show as `locked` and the client asks to unlock them. An item
    /// whose list does not trust the caller is locked for it; one a sandboxed caller is not
    /// named by is left out (docs/secret-service.md, "Access control").
    func searchItems(attributes: [String: String], call: CallContext) throws(DBusError) -> (unlocked: [String], locked: [String]) {
        try CallLimits.checkAttributes(attributes, "A search has")
        let screen = context.callerAccess(call).screen
        var unlocked: [String] = []
        var locked: [String] = []
        for collection in context.directory.all() {
            try call.checkStillWanted()
            do throws(KeychainError) {
                // Matches and their lists in one read (docs/performance.md, "One read per call").
                let read = try collection.read(.matching(attributes), screen: screen, secrets: false)
                guard !read.items.isEmpty else { continue }
                // Each path written once, straight into its list (no arrays of the ids and
                // paths first), and none for an item the caller is not shown.
                let segment = ObjectPaths.segment(for: collection.id)
                for item in read.items {
                    switch item.verdict {
                    case .hidden: continue
                    case .mustAsk: locked.append(ObjectPaths.path(of: item.id, inCollectionSegment: segment))
                    case .allowed:
                        let path = ObjectPaths.path(of: item.id, inCollectionSegment: segment)
                        if read.locked { locked.append(path) } else { unlocked.append(path) }
                    }
                }
            } catch {
                // One damaged or vanished keychain must not hide the others' items.
                context.logger.warning("SearchItems skips \(ObjectPaths.path(of: collection.id)): \(error.wireMessage)")
            }
        }
        return (unlocked, locked)
    }

    /// `a{o(oayays)}` for the items that exist in unlocked collections; one batch per collection.
    /// The reply is written straight from the sealed secrets (`DBusBodyWriter`): no value tree of
    /// a thousand entries to build, check and release (docs/performance.md, "GetSecrets of many
    /// items"). A plain session's copies of the plaintexts are wiped once written.
    ///
    /// A client asks for up to thousands of items, nearly always of one collection: each
    /// distinct collection part of the paths is parsed and resolved once (consecutive paths
    /// usually share it, which one comparison tells), each item part is only 32 hex digits to
    /// read, and the engine reads each collection's secrets in one batch. Every step is linear in
    /// the paths however many collections they name (dictionaries, no searches through lists).
    func secrets(of paths: [String], for session: SecretSession, call: CallContext) throws(DBusError) -> DBusWrittenValue {
        try CallLimits.check(paths.count, atMost: ServiceLimits.objectPathsPerCall, "GetSecrets takes", "object paths")
        // The paths as the call carried them, which libdbus checked as it received the call:
        // written back into the reply without a check of each (docs/performance.md).
        let received = call.call.receivedObjectPaths(at: 0).flatMap { $0.count == paths.count ? $0 : nil }
        var groups: [SecretGroup] = []
        var groupOfCollection: [CollectionID: Int] = [:]
        var groupOfPrefix: [String: Int?] = [:]
        // The last path's part before its item, as bytes: the next path's compared with one memcmp.
        var lastPrefix: [UInt8] = []
        var lastGroup: Int??
        for (index, path) in paths.enumerated() {
            if index % CallLimits.itemsBetweenChecks == 0 { try call.checkStillWanted() }
            let parts = ObjectPaths.withItemPathParts(path) { (prefix, id) -> (id: UUID, sameAsLast: String?) in
                if lastGroup != nil, prefix.count == lastPrefix.count,
                   prefix.isEmpty || lastPrefix.withUnsafeBufferPointer({ memcmp($0.baseAddress!, prefix.baseAddress!, prefix.count) == 0 }) {
                    return (id, nil)
                }
                lastPrefix = Array(prefix)
                return (id, String(decoding: prefix, as: UTF8.self))
            }
            guard let (id, newPrefix) = parts else { continue }
            let group: Int?
            if let newPrefix {
                if let known = groupOfPrefix[newPrefix] {
                    group = known
                } else {
                    group = self.group(ofCollectionAt: newPrefix, &groups, &groupOfCollection)
                    groupOfPrefix[newPrefix] = .some(group)
                }
                lastGroup = .some(group)
            } else {
                group = lastGroup ?? nil
            }
            if let group {
                let checked: DBusCheckedPath
                if let received { checked = received[index] } else { checked = try DBusCheckedPath(path) }
                groups[group].items.append((checked, id))
            }
        }
        var batches: [SealedBatch] = []
        // A plain session's entries hold copies of the plaintexts: wiped once written, or now
        // if the call fails before its reply.
        let wipesValues = session.cipher == nil
        func wipe() { for batch in batches { for sealed in batch.sealed { sealed.value.withUnsafeBytes { SecretMemory.wipe($0) } } } }
        do {
            try sealSecrets(of: groups, for: session, call: call, into: &batches)
        } catch {
            if wipesValues { wipe() }
            throw error
        }
        // Checked once here, written in every secret.
        let sessionPath = try DBusCheckedPath(session.path)
        return DBusWrittenValue(write: { (writer) throws(DBusError) in
            try writer.appendArray { (dictionary) throws(DBusError) in
                for batch in batches {
                    for index in batch.paths.indices {
                        try dictionary.appendDictEntry { (pair) throws(DBusError) in
                            try pair.appendObjectPath(batch.paths[index])
                            try SecretEncoding.write(batch.sealed[index], sessionPath: sessionPath, into: &pair)
                        }
                    }
                }
            }
        }, whenDone: {
            if wipesValues { wipe() }
        })
    }

    /// One collection's entries of GetSecrets' reply: the items' paths and their secrets, sealed
    /// for the session, side by side (no array of pairs: copying each sealed secret into one
    /// retained and released its three parts).
    private typealias SealedBatch = (paths: [DBusCheckedPath], sealed: [SecretEncoding.Sealed])

    /// Reads each group's secrets (one batch per collection) and seals them for `session`.
    private func sealSecrets(of groups: [SecretGroup], for session: SecretSession, call: CallContext,
                             into batches: inout [SealedBatch]) throws(DBusError) {
        let screen = context.callerAccess(call).screen
        // The kept listing (one folder read at most) instead of a look for each named keychain's
        // file: a call naming the cap's worth of made-up collections costs no file probes.
        let listed = groups.count > 1 ? Set(context.directory.allIDs()) : nil
        for (index, (collection, asked)) in groups.enumerated() {
            if index % CallLimits.itemsBetweenChecks == 0 { try call.checkStillWanted() }
            if let listed, !listed.contains(collection.id) { continue }
            let read: ScreenedRead
            do throws(KeychainError) {
                // Lists, MACs and secrets in one read; items locked for the caller get no
                // secret, and are left out as those of a locked keychain are.
                read = try collection.read(.ids(asked.map(\.id)), screen: screen, secrets: true)
            } catch where error.status == SecStatus.interactionNotAllowed || error.status == SecStatus.noSuchKeychain {
                continue  // locked meanwhile, or gone
            } catch {
                throw error.secretServiceError(ObjectPaths.path(of: collection.id))
            }
            if read.locked { continue }  // the client unlocks first, as libsecret does
            // By index: a loop over the items would copy each whole item to reach its secret.
            defer { for index in read.items.indices { if let secret = read.items[index].secret { SecretWipe.wipe(secret.value) } } }
            guard !read.items.isEmpty else { continue }
            let paired = Self.pair(asked, with: read.items)
            let sealed = try SecretEncoding.sealAll(count: paired.items.count, for: session) { index in
                read.items[paired.items[index]].secret!
            }
            batches.append((paired.paths, sealed))
        }
    }

    /// The paths of `asked` (in its order, a path asked twice answered twice) whose items
    /// `items` holds with a secret, and each one's item index. The read returns the ids in the
    /// order asked, so one walk pairs them; only when it left some out (gone, or asked twice)
    /// are the rest looked up by id.
    private static func pair(_ asked: [(path: DBusCheckedPath, id: UUID)],
                             with items: [ScreenedItem]) -> (paths: [DBusCheckedPath], items: [Int]) {
        var paired: (paths: [DBusCheckedPath], items: [Int]) = ([], [])
        paired.paths.reserveCapacity(asked.count)
        paired.items.reserveCapacity(asked.count)
        var next = items.startIndex
        var byID: [UUID: Int]?
        for item in asked {
            if byID == nil, next < items.endIndex, items[next].id == item.id {
                if items[next].secret != nil {
                    paired.paths.append(item.path)
                    paired.items.append(next)
                }
                next += 1
                continue
            }
            if byID == nil {
                var table: [UUID: Int] = [:]
                for index in items.indices where items[index].secret != nil { table[items[index].id] = index }
                byID = table
            }
            if let index = byID?[item.id] {
                paired.paths.append(item.path)
                paired.items.append(index)
            }
        }
        return paired
    }

    /// The items GetSecrets asks of one collection.
    private typealias SecretGroup = (collection: any SecretCollection, items: [(path: DBusCheckedPath, id: UUID)])

    /// The index in `groups` of the collection at `path` (an alias path resolves to the collection
    /// it names, which may have a group already); nil when `path` names none.
    private func group(ofCollectionAt path: String, _ groups: inout [SecretGroup],
                       _ groupOfCollection: inout [CollectionID: Int]) -> Int? {
        guard case .collection(let address)? = ObjectPaths.parse(path),
              let collection = try? context.collection(address) else { return nil }
        if let existing = groupOfCollection[collection.id] { return existing }
        groups.append((collection, []))
        groupOfCollection[collection.id] = groups.count - 1
        return groups.count - 1
    }

    // MARK: Lock state

    /// Objects in unlocked collections come back at once; the others wait for a prompt
    /// (`Completed` lists those now usable, `ao`). The prompt first asks for the passwords of
    /// locked keychains, then, in one question, whether the caller may use the items locked for
    /// it (docs/secret-service.md, "Unlock and the access question"). Items a sandboxed caller
    /// cannot see are left out, as missing ones are; a collection is about its keychain's lock only.
    func unlock(objects paths: [String], call: CallContext) throws(DBusError) -> (unlocked: [String], prompt: String) {
        try CallLimits.check(paths.count, atMost: ServiceLimits.objectPathsPerCall, "Unlock takes", "object paths")
        let access = context.callerAccess(call)
        // By their place in `paths`: answers keep the order they were asked in.
        var unlockedAt: [(index: Int, path: String)] = []
        var pending: [(path: String, keychain: String)] = []
        var questioned: [UnlockItem] = []
        var itemsOf: [CollectionID: (collection: any SecretCollection, items: [(index: Int, path: String, id: UUID)])] = [:]
        var order: [CollectionID] = []
        for (index, path) in paths.enumerated() {
            if index % CallLimits.itemsBetweenChecks == 0 { try call.checkStillWanted() }
            guard let (collection, item) = context.existingObject(path) else { continue }
            if let item {
                if itemsOf[collection.id] == nil { order.append(collection.id) }
                itemsOf[collection.id, default: (collection, [])].items.append((index, path, item))
            } else if (try? collection.isLocked()) == true, case .keychain(let name) = collection.id {
                pending.append((path, name))
            } else {
                unlockedAt.append((index, path))
            }
        }
        for id in order {
            guard let (collection, items) = itemsOf[id] else { continue }
            try call.checkStillWanted()
            let verdicts = try engine(ObjectPaths.path(of: id)) { () throws(KeychainError) in
                try access.verdicts(items.map(\.id), in: collection)
            }
            let keychain: String? = if case .keychain(let name) = id, (try? collection.isLocked()) == true { name } else { nil }
            for (item, verdict) in zip(items, verdicts) {
                switch verdict {
                case .hidden: continue
                case .mustAsk: questioned.append(UnlockItem(path: item.path, id: item.id, collection: collection, keychain: keychain))
                case .allowed:
                    if let keychain { pending.append((item.path, keychain)) } else { unlockedAt.append((item.index, item.path)) }
                }
            }
        }
        let unlocked = unlockedAt.sorted { $0.index < $1.index }.map(\.path)
        guard !pending.isEmpty || !questioned.isEmpty else {
            return (unlocked, SecretServiceNames.noObject)
        }
        var keychains: [String] = []
        var seen: Set<String> = []
        for name in pending.map(\.keychain) + questioned.compactMap(\.keychain) where seen.insert(name).inserted { keychains.append(name) }
        let requester = ServiceContext.describe(call.sender, on: call.connection)
        if !keychains.isEmpty { try context.refuseWithoutPrompter(to: "unlock", keychains, requester: requester) }
        let context = self.context
        let waiting = pending
        let question = questioned
        let caller = access.caller
        let prompt = try context.prompts.create(owner: call.sender, emptyResult: .objectPathArray([])) { [keychains] promptContext in
            let opened = keychains.isEmpty ? [] : UnlockPrompt(context: context, requester: requester).run(keychains, promptContext)
            guard keychains.isEmpty || !opened.isEmpty else { return nil }
            var usable = waiting.filter { opened.contains($0.keychain) }.map(\.path)
            if let caller, let gate = context.access?.gate, !question.isEmpty, !promptContext.isDismissed {
                let items = question.filter { $0.keychain.map(opened.contains) ?? true }
                if gate.ask(caller, about: UnlockItem.accessItems(items), interactive: true, withdrawal: promptContext.withdrawal).allows {
                    usable += items.map(\.path)
                }
            }
            return usable.isEmpty ? nil : .objectPathArray(usable)
        }
        return (unlocked, prompt)
    }

    /// Locks the keychains of the objects given (no prompt), each keychain once; returns the
    /// objects now locked. The in-memory `session` collection does not lock.
    private func lock(_ paths: [String], call: CallContext) throws(DBusError) -> [String] {
        try CallLimits.check(paths.count, atMost: ServiceLimits.objectPathsPerCall, "Lock takes", "object paths")
        var locked: [String] = []
        var done: Set<String> = []
        for (index, path) in paths.enumerated() {
            if index % CallLimits.itemsBetweenChecks == 0 { try call.checkStillWanted() }
            guard let (collection, _) = context.existingObject(path), case .keychain(let name) = collection.id else { continue }
            if done.insert(name).inserted {
                do throws(KeychainError) {
                    try context.store.locking.lock(name)
                } catch {
                    throw error.secretServiceError(path)
                }
            }
            locked.append(path)
        }
        return locked
    }

    // MARK: Collections and aliases

    /// A keychain needs a password, so creating one is a prompt; it completes with the new
    /// collection (`o`). An alias that already names a collection returns that one at once.
    private func createCollection(_ properties: PropertyDictionary, alias: String,
                                  call: CallContext) throws(DBusError) -> (collection: String, prompt: String) {
        let label = properties.string(SecretServiceNames.collectionLabelProperty) ?? ""
        // Refused before the password is asked for, not after.
        guard label.utf8.count <= KeychainStore.Registry.labelMaximumBytes else {
            throw .invalidArgs("A collection label is at most \(KeychainStore.Registry.labelMaximumBytes) bytes")
        }
        if !alias.isEmpty {
            guard CollectionDirectory.aliases.contains(alias) else {
                throw .notSupported("Only the aliases \(CollectionDirectory.aliases.joined(separator: ", ")) exist")
            }
            if let existing = context.directory.collection(ofAlias: alias) {
                return (ObjectPaths.path(of: existing.id), SecretServiceNames.noObject)
            }
        }
        let name = alias == "login" ? KeywellNames.loginKeychain : KeychainNaming.unusedName(forLabel: label, store: context.store)
        let requester = ServiceContext.describe(call.sender, on: call.connection)
        try context.refuseWithoutPrompter(to: "create", [name], requester: requester)
        let context = self.context
        let prompt = try context.prompts.create(owner: call.sender, emptyResult: .objectPath(SecretServiceNames.noObject)) { promptContext in
            guard let id = NewKeychainPrompt(context: context, requester: requester).run(name: name, label: label, alias: alias, promptContext) else {
                return nil
            }
            return .objectPath(ObjectPaths.path(of: id))
        }
        return (SecretServiceNames.noObject, prompt)
    }

    /// `default` follows the default keychain; `login` and `session` are fixed.
    private func setAlias(_ alias: String, to path: String) throws(DBusError) {
        guard alias == "default" else {
            throw .notSupported(CollectionDirectory.aliases.contains(alias)
                ? "The alias \(alias) cannot be changed" : "Only the aliases \(CollectionDirectory.aliases.joined(separator: ", ")) exist")
        }
        guard case .collection(let address)? = ObjectPaths.parse(path), let collection = context.directory.resolve(address) else {
            if path == SecretServiceNames.noObject { throw .notSupported("The default keychain cannot be unset, only changed") }
            throw SecretServiceError.noSuchObject("No collection \(path)")
        }
        guard case .keychain(let name) = collection.id else {
            throw .notSupported("The in-memory session collection cannot be the default keychain")
        }
        do throws(KeychainError) {
            try context.store.registry.setDefaultKeychain(name)
        } catch {
            throw error.secretServiceError(path)
        }
    }
}

/// An item an Unlock prompt asks the access question about.
private struct UnlockItem: Sendable {
    let path: String
    let id: UUID
    let collection: any SecretCollection
    /// Its keychain when that was locked too (the password comes first).
    let keychain: String?

    /// The items as the question names them, with their labels.
    static func accessItems(_ items: [UnlockItem]) -> [AccessItem] {
        var result: [AccessItem] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard let named = try? item.collection.access([item.id]).item(0) else { continue }
            let label = (try? item.collection.item(item.id).label) ?? ""
            result.append(named.labelled(label))
        }
        return result
    }
}

/// Keychain names made from collection labels.
enum KeychainNaming {
    /// Characters a keychain name cannot hold become `_`; a leading `.` too; at most 180 bytes.
    static func sanitized(_ label: String) -> String {
        var base = String(label.unicodeScalars.map { scalar -> Character in
            let allowed = scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || scalar == " " || scalar == "." || scalar == "_" || scalar == "-")
            return allowed ? Character(scalar) : "_"
        })
        if base.hasPrefix(".") { base = "_" + base.dropFirst() }
        base = String(decoding: base.utf8.prefix(180), as: UTF8.self)
        return base.trimmingCharacters(in: .whitespaces).isEmpty ? "keychain" : base
    }

    /// The label with characters a keychain name cannot hold replaced by `_`, made unique with
    /// " 2", " 3"… ("Default keyring" stays as it is).
    static func unusedName(forLabel label: String, store: KeychainStore) -> String {
        let base = sanitized(label)
        var candidate = base
        var number = 2
        while store.registry.keychainExists(candidate) {
            candidate = "\(base) \(number)"
            number += 1
        }
        return candidate
    }
}
