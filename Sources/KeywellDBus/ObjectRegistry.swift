import KeywellSystem

/// Which object answers which path: exact registrations first, then the deepest subtree.
/// A `Protected` table, looked up on every call: its lock is inlined into the caller, where
/// `ConditionLock`'s generic `withLock` was a call into another module (docs/performance.md,
/// "What every method call paid").
final class ObjectRegistry: Sendable {
    private struct Table {
        var exact: [String: any DBusObject] = [:]
        var subtrees: [String: any DBusObject] = [:]
        /// `subtrees` deepest first, for `object(at:)`: walking the dictionary copied each entry out
        /// (a string and an existential) on every call, a sixth of the dispatch before a handler.
        /// Roots and objects apart: walking pairs still copied each pair (its existential too) out
        /// of the array, 40 % of the look-up; the roots are compared in place and only the object
        /// found is copied.
        var subtreeRootsDeepestFirst: [String] = []
        var subtreeObjectsDeepestFirst: [any DBusObject] = []
        /// `exact` as two arrays, walked for a call's path read in place (`object(at:)` with a
        /// `MessageText`) while there are at most `exactWalkLimit` of them.
        var exactPaths: [String] = []
        var exactObjects: [any DBusObject] = []

        mutating func listExact() {
            exactPaths = Array(exact.keys)
            exactObjects = exactPaths.map { exact[$0]! }
        }

        mutating func sortSubtrees() {
            let sorted = subtrees.sorted { $0.key.utf8.count > $1.key.utf8.count }
            subtreeRootsDeepestFirst = sorted.map(\.key)
            subtreeObjectsDeepestFirst = sorted.map(\.value)
        }
    }

    private let table = Protected(Table())

    func register(_ object: any DBusObject, at path: String, subtree: Bool) throws(DBusError) {
        try NameValidation.objectPath(path)
        let taken = table.withLock { table -> Bool in
            if subtree {
                if table.subtrees[path] != nil { return true }
                table.subtrees[path] = object
                table.sortSubtrees()
            } else {
                if table.exact[path] != nil { return true }
                table.exact[path] = object
                table.listExact()
            }
            return false
        }
        if taken { throw DBusError(name: DBusError.Name.objectPathInUse, message: "An object is already registered at \(path)") }
    }

    func unregister(path: String) {
        table.withLock { table in
            if table.exact.removeValue(forKey: path) != nil { table.listExact() }
            if table.subtrees.removeValue(forKey: path) != nil { table.sortSubtrees() }
        }
    }

    /// Exact registrations walked byte for byte up to this many (a service registers a few);
    /// past it the path is made a `String` and hashed.
    static let exactWalkLimit = 16

    /// The object responsible for the path of a call, read in place, if any. Subtrees are few (a
    /// service registers one or two), so each is compared with the path in place, deepest first:
    /// looking up every prefix of the path made a string for each, on every call to an object
    /// below a subtree. Also gives the path as a `String`,
    /// the registered one's own when the call names a registered path or a subtree's root (the
    /// Secret Service's own calls), so that only a path below a root is made anew.
    func object(at path: MessageText) -> (path: String, object: (any DBusObject)?) {
        table.read { table -> (path: String, object: (any DBusObject)?) in
            var made: String?
            if table.exactPaths.count <= Self.exactWalkLimit {
                for index in table.exactPaths.indices where path.isExactly(table.exactPaths[index]) {
                    return (table.exactPaths[index], table.exactObjects[index])
                }
            } else {
                let string = path.string
                if let object = table.exact[string] { return (string, object) }
                made = string
            }
            for index in table.subtreeRootsDeepestFirst.indices where path.isIn(namespace: table.subtreeRootsDeepestFirst[index]) {
                let root = table.subtreeRootsDeepestFirst[index]
                return (path.isExactly(root) ? root : made ?? path.string, table.subtreeObjectsDeepestFirst[index])
            }
            return (made ?? path.string, nil)
        }
    }

    /// First path elements of registrations strictly below `path` (for introspecting parents).
    func registeredChildren(of path: String) -> [String] {
        let prefix = path == "/" ? "/" : path + "/"
        let paths = table.read { Array($0.exact.keys) + Array($0.subtrees.keys) }
        var names = Set<String>()
        for registered in paths where registered.hasPrefix(prefix) && registered != path {
            let rest = registered.dropFirst(prefix.count)
            if let first = rest.split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }
}
