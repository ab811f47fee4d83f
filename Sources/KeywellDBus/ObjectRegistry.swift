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
            }
            return false
        }
        if taken { throw DBusError(name: DBusError.Name.objectPathInUse, message: "An object is already registered at \(path)") }
    }

    func unregister(path: String) {
        table.withLock { table in
            table.exact[path] = nil
            if table.subtrees.removeValue(forKey: path) != nil { table.sortSubtrees() }
        }
    }

    /// The object responsible for `path`, if any. Subtrees are few (a service registers one or
    /// two), so each is compared with the path in place, deepest first: looking up every prefix
    /// of the path made a string for each, on every call to an object below a subtree.
    func object(at path: String) -> (any DBusObject)? {
        table.read { table -> (any DBusObject)? in
            if let object = table.exact[path] { return object }
            guard let index = table.subtreeRootsDeepestFirst.firstIndex(where: { ObjectPathNamespace.path(path, isIn: $0) }) else { return nil }
            return table.subtreeObjectsDeepestFirst[index]
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
