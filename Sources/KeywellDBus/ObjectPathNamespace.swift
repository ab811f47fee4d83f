/// Object paths as namespaces, as a match rule's `path_namespace` means them: a namespace holds
/// its own path and every path below it (`/a/b` is in `/a`, `/ab` is not; everything is in `/`).
public enum ObjectPathNamespace {
    /// Compared in place, without building `namespace + "/"`: object lookups ask on every call.
    public static func path(_ path: String, isIn namespace: String) -> Bool {
        if namespace == "/" { return true }
        let bytes = path.utf8
        guard bytes.starts(with: namespace.utf8) else { return false }
        let end = bytes.index(bytes.startIndex, offsetBy: namespace.utf8.count)
        return end == bytes.endIndex || bytes[end] == UInt8(ascii: "/")
    }
}
