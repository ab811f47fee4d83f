import KeywellNativeClient
import KeywellProtocol

/// What `keywell access` does with the items it found: print their lists, or add or remove one
/// program in each (docs/access-control.md, "Grants a person can manage").
struct AccessGrants {
    let context: CommandContext

    func perform(_ request: AccessCommand.Request) -> Int32 {
        let items: [FoundItem]
        do {
            items = try GrantedItems(search: ItemSearch(context: context)).matching(request.selectors)
        } catch {
            context.diagnostics.perror("SecKeychainSearchCreateFromAttributes", error.status)
            context.diagnostics.hint(for: error, keychain: request.selectors.keychains.first.map(context.naming.displayName))
            return error.status
        }
        // `list -T`: the items that name the program (every item a program was granted).
        let chosen = request.action == .add ? items : items.filter { item in
            request.program.map { $0.isNamed(in: item.access) } ?? true
        }
        guard !chosen.isEmpty else {
            context.diagnostics.error("access \(request.action.rawValue): \(nothingMatches(request))")
            return SecStatus.itemNotFound
        }
        switch request.action {
        case .list where request.json:
            JSONOutput.write(.array(chosen.map { item in
                ItemJSON.item(item, keychainPath: context.naming.path(for: item.keychain), includeSecret: false, includeAccess: true)
            }), to: context.output)
            return CommandStatus.success
        case .list:
            for item in chosen { context.output.write(GrantRendering.block(item, context)) }
            return CommandStatus.success
        case .add, .remove:
            var status = CommandStatus.success
            for item in chosen {
                if let failure = change(item, request) { status = failure }
            }
            return status
        }
    }

    private func nothingMatches(_ request: AccessCommand.Request) -> String {
        let program = request.program.map { " names \($0.identity)" } ?? ""
        let selected = request.selectors.isEmpty ? "no item" : "no item matching the -s/-a/-l given"
        return "\(selected)\(request.action == .add ? "" : program) was found (nothing changed)"
    }

    /// One item's list changed, or why not; nil when it went well (or needed no change).
    private func change(_ item: FoundItem, _ request: AccessCommand.Request) -> Int32? {
        guard let program = request.program else { return nil }
        let name = GrantRendering.heading(item, context)
        guard let current = item.access, let trusted = current.applications else {
            context.output.write("\(name): trusts any application; unchanged\n")
            return nil
        }
        let updated: [String]
        if request.action == .add {
            if trusted.contains(program.identity) {
                context.output.write("\(name): already trusts \(program.identity)\n")
                return nil
            }
            updated = trusted + [program.identity]
        } else {
            updated = trusted.filter { !program.isNamed(by: $0) }
        }
        do throws(KeychainError) {
            try GrantedItems(search: ItemSearch(context: context)).setAccess(try AccessList.validated(updated), of: item)
        } catch {
            context.output.flush()
            context.diagnostics.perror("SecKeychainItemSetAccess", error.status)
            context.diagnostics.hint(for: error, keychain: context.naming.displayName(for: item.keychain))
            return error.status
        }
        let changed = request.action == .add ? [program.identity] : trusted.filter { !updated.contains($0) }
        for identity in changed { context.output.write("\(name): \(request.action == .add ? "added" : "removed") \(identity)\n") }
        return nil
    }
}

/// How `keywell access` names an item and prints its list: one entry a line, as
/// `dump-keychain -a` prints them.
enum GrantRendering {
    static func heading(_ item: FoundItem, _ context: CommandContext) -> String {
        let generic = item.itemClass == .genericPassword
        let service = item.text(generic ? AttributeKey.service : AttributeKey.server) ?? ""
        return "\(context.naming.displayName(for: item.keychain)): \(generic ? "generic" : "internet") password "
            + "\"\(item.text(AttributeKey.label) ?? "")\" (\(generic ? "service" : "server") \"\(service)\", "
            + "account \"\(item.text(AttributeKey.account) ?? "")\")"
    }

    static func block(_ item: FoundItem, _ context: CommandContext) -> String {
        var text = heading(item, context) + "\n"
        switch item.access?.applications {
        case nil: text += "    any application\n"
        case let identities? where identities.isEmpty: text += "    no application\n"
        case let identities?: text += identities.map { "    \($0)\n" }.joined()
        }
        return text
    }
}
