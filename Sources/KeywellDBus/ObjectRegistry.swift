import KeywellSystem

/// Which object answers which path: exact registrations first, then the deepest subtree.
// @unchecked: `exact` and `subtrees` are only touched under `lock`.
final class ObjectRegistry: @unchecked Sendable {
    private let lock = ConditionLock()
    private var exact: [String: any DBusObject] = [:]
    private var subtrees: [String: any DBusObject] = [:]
    /// `subtrees` deepest first, for `object(at:)`: walking the dictionary copied each entry out
    /// (a string and an existential) on every call, a sixth of the dispatch before a handler.
    /// Roots and objects apart: walking pairs still copied each pair (its existential too) out
    /// of the array, 40 % of the look-up; the roots are compared in place and only the object
    /// found is copied.
    private var subtreeRootsDeepestFirst: [String] = []
    private var subtreeObjectsDeepestFirst: [any DBusObject] = []

    func register(_ object: any DBusObject, at path: String, subtree: Bool) throws(DBusError) {
        try NameValidation.objectPath(path)
        let taken = lock.withLock { () -> Bool in
            if subtree {
                if subtrees[path] != nil { return true }
                subtrees[path] = object
                sortSubtrees()
            } else {
                if exact[path] != nil { return true }
                exact[path] = object
            }
            return false
        }
        if taken { throw DBusError(name: DBusError.Name.objectPathInUse, message: "An object is already registered at \(path)") }
    }

    func unregister(path: String) {
        lock.withLock {
            exact[path] = nil
            if subtrees.removeValue(forKey: path) != nil { sortSubtrees() }
        }
    }

    /// Under the lock.
    private func sortSubtrees() {
        let sorted = subtrees.sorted { $0.key.utf8.count > $1.key.utf8.count }
        subtreeRootsDeepestFirst = sorted.map(\.key)
        subtreeObjectsDeepestFirst = sorted.map(\.value)
    }

    /// The object responsible for `path`, if any. Subtrees are few (a service registers one or
    /// two), so each is compared with the path in place, deepest first: looking up every prefix
    /// of the path made a string for each, on every call to an object below a subtree.
    func object(at path: String) -> (any DBusObject)? {
        lock.withLock {
            if let object = exact[path] { return object }
            guard let index = subtreeRootsDeepestFirst.firstIndex(where: { ObjectPathNamespace.path(path, isIn: $0) }) else { return nil }
            return subtreeObjectsDeepestFirst[index]
        }
    }

    /// First path elements of registrations strictly below `path` (for introspecting parents).
    func registeredChildren(of path: String) -> [String] {
        let prefix = path == "/" ? "/" : path + "/"
        let paths = lock.withLock { Array(exact.keys) + Array(subtrees.keys) }
        var names = Set<String>()
        for registered in paths where registered.hasPrefix(prefix) && registered != path {
            let rest = registered.dropFirst(prefix.count)
            if let first = rest.split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }
}
