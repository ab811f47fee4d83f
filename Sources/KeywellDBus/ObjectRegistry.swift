/// Which object answers which path: exact registrations first, then the deepest subtree.
final class ObjectRegistry: @unchecked Sendable {
    private let lock = ConditionLock()
    private var exact: [String: any DBusObject] = [:]
    private var subtrees: [String: any DBusObject] = [:]

    func register(_ object: any DBusObject, at path: String, subtree: Bool) throws(DBusError) {
        try NameValidation.objectPath(path)
        let taken = lock.withLock { () -> Bool in
            if subtree {
                if subtrees[path] != nil { return true }
                subtrees[path] = object
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
            subtrees[path] = nil
        }
    }

    /// The object responsible for `path`, if any.
    func object(at path: String) -> (any DBusObject)? {
        lock.withLock {
            if let object = exact[path] { return object }
            var prefix = Substring(path)
            while true {
                if let object = subtrees[String(prefix)] { return object }
                guard prefix != "/", let slash = prefix.lastIndex(of: "/") else { return nil }
                prefix = slash == prefix.startIndex ? "/" : prefix[..<slash]
            }
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
