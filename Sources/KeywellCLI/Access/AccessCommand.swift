import KeywellNativeClient
import KeywellProtocol

/// `keywell access list|add|remove`: the programs existing items trust, shown and changed by a
/// person (docs/access-control.md, "Grants a person can manage"). getopt stops at the action
/// word, so the words after it are parsed again with the same options.
enum AccessCommand {
    enum Action: String, CaseIterable {
        case list, add, remove
    }

    static let identityOption = "identity"

    struct Request {
        let action: Action
        let selectors: GrantedItems.Selectors
        let program: ProgramGrant?
        var json = false
    }

    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        guard let first = invocation.operands.first, let action = Action(rawValue: first) else { return CommandStatus.usage }
        var parser = GetoptParser(optionString: spec.optionString, longFlags: spec.longFlags)
        parser.longValueOptions = [identityOption]
        let after: GetoptParser.Result
        do {
            after = try parser.parse(Array(invocation.operands), firstWordIndex: invocation.argvIndex ?? 0)
        } catch {
            StandardStreams.error.write(error.getoptLine(argv0: "access \(action.rawValue)"))
            return CommandStatus.usage
        }
        guard after.operands.isEmpty else { return CommandStatus.usage }
        if after.longFlags.contains("help") {
            StandardStreams.output.write(HelpCommand.fullHelp(spec, progname: context.progname))
            return CommandStatus.success
        }
        var arguments = invocation.arguments
        arguments.options += after.options
        arguments.longValues.merge(after.longValues) { _, later in later }
        arguments.longFlags.formUnion(after.longFlags)
        // --json is for `list`: add and remove print what they changed.
        if action != .list && arguments.longFlags.contains("json") { return CommandStatus.usage }
        let request: Request
        switch makeRequest(action, arguments, context) {
        case .success(let made): request = made
        case .failure(let exit): return exit.status
        }
        return AccessGrants(context: context).perform(request)
    }

    private static var spec: CommandSpec { CommandTable.all.first { $0.name == "access" }! }

    private static func makeRequest(_ action: Action, _ arguments: GetoptParser.Result,
                                    _ context: CommandContext) -> Result<Request, CommandExit> {
        let selectors = GrantedItems.Selectors(service: arguments.value("s"), account: arguments.value("a"),
                                               label: arguments.value("l"), keychains: arguments.values("k"))
        let path = arguments.value("T"), identity = arguments.longValues[identityOption]
        if path != nil && identity != nil { return .failure(CommandExit(status: CommandStatus.usage)) }
        if action != .list && path == nil && identity == nil {
            context.diagnostics.error("access \(action.rawValue): name the program with -T path or --identity id")
            return .failure(CommandExit(status: CommandStatus.usage))
        }
        if action == .add && selectors.isEmpty {
            context.diagnostics.error("access add: choose the items with -s, -a or -l (nothing changed)")
            return .failure(CommandExit(status: CommandStatus.usage))
        }
        do throws(KeychainError) {
            var program: ProgramGrant?
            if let path { program = try ProgramGrant.from(path: path) }
            if let identity { program = try ProgramGrant.from(identity: identity) }
            return .success(Request(action: action, selectors: selectors, program: program,
                                    json: arguments.longFlags.contains("json")))
        } catch {
            context.diagnostics.error("access \(action.rawValue): \(error.detail ?? SecStatus.message(for: error.status))")
            return .failure(CommandExit(status: CommandStatus.failure))
        }
    }
}
