/// A start-up or set-up failure of the daemon itself, with a message for people.
struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
