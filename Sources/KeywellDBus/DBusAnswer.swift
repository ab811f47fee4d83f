/// What a method that may have to ask a person returns (docs/dbus-layer.md, "Where a call
/// runs"): its answer, read and ready; or what its read found and the rest of the call, which
/// asks the question and finishes with that read. A method marked `org.keywell.MayAsk` in its
/// XML returns one; the object runs `afterQuestion` off the I/O thread
/// (`DBusMethodCall.finishOffIOThread`), so the read done on the I/O thread is never done again
/// and a question never waits there.
public enum DBusAnswer<Value, Failure: Error> {
    case answered(Value)
    case afterQuestion(DBusQuestion<Value, Failure>)

    /// The answer, asking first when the read left a question (on a thread that may wait).
    public func asked() throws(Failure) -> Value {
        switch self {
        case .answered(let value): value
        case .afterQuestion(let question): try question.askAndFinish()
        }
    }

    /// The same answer with its value turned by `transform` (after the question, if one is left).
    public func map<T>(_ transform: @escaping (Value) throws(Failure) -> T) throws(Failure) -> DBusAnswer<T, Failure> {
        switch self {
        case .answered(let value): .answered(try transform(value))
        case .afterQuestion(let question): .afterQuestion(question.map(transform))
        }
    }
}

/// The rest of a call whose read found that the person must be asked: the question, then the
/// finish, with what the read found captured. Made on the thread that read and handed once to
/// the thread that finishes (the hand-off orders the two), so it is used by one thread at a time.
// @unchecked: `rest` and what it captured are used by one thread at a time (above).
public struct DBusQuestion<Value, Failure: Error>: @unchecked Sendable {
    private let rest: () throws(Failure) -> Value

    public init(_ rest: @escaping () throws(Failure) -> Value) {
        self.rest = rest
    }

    /// Asks (this may wait minutes) and finishes the call.
    public func askAndFinish() throws(Failure) -> Value { try rest() }

    public func map<T>(_ transform: @escaping (Value) throws(Failure) -> T) -> DBusQuestion<T, Failure> {
        let rest = self.rest
        return DBusQuestion<T, Failure> { () throws(Failure) -> T in try transform(rest()) }
    }
}
