import CDBus

/// What a serving connection allows one incoming call: how many values its arguments may
/// decode to, and how long its handler works before giving up; and whether it notices callers
/// leaving the bus.
extension DBusConnection {
    /// Time from a call's arrival after which `DBusMethodCall.checkStillWanted()` says nobody
    /// waits any more (default 25 s, the default timeout of a D-Bus call).
    public var callDeadline: Duration {
        get { limits.withLock { $0.deadline } }
        set { limits.withLock { $0.deadline = newValue } }
    }

    /// Most values an incoming call's arguments may decode to (a byte array counts as one);
    /// a call with more is answered LimitsExceeded without reaching a handler. Unlimited by
    /// default; replies this connection receives are never limited.
    public var maximumDecodedValuesPerCall: Int {
        get { limits.withLock { $0.decodedValues } }
        set { limits.withLock { $0.decodedValues = newValue } }
    }

    /// Most bytes one incoming message may have; libdbus drops the connection when a peer
    /// sends a bigger one, before reading it whole. For connections to a single peer (the
    /// direct socket): on a bus connection any client's big message would drop the whole bus.
    /// libdbus's default is the wire format's maximum, 128 MiB.
    public var maximumMessageSize: Int {
        get { Int(dbus_connection_get_max_message_size(raw)) }
        set { dbus_connection_set_max_message_size(raw, newValue) }
    }

    /// Subscribes to callers leaving the bus, so that `checkStillWanted()` of their calls still
    /// being handled fails. For a service whose handlers may work long (a connection that only
    /// makes calls has no use for it).
    public func watchCallersLeaving() throws(DBusError) {
        inFlight.startWatching()
        let inFlight = self.inFlight
        // arg2 '': the name has no owner any more; unique names (":1.42") are never reused.
        _ = try addMatch(.namesLeft()) { signal in
            guard let name = signal.arguments.first?.stringValue, name.hasPrefix(":") else { return }
            inFlight.callerLeft(name)
        }
    }

    /// How many calls handlers gave up on because their caller left or their deadline passed.
    public var abandonedCallCount: Int { inFlight.abandonedCount }

    /// The deadline of a call that arrived at `now`, given the connection's `callDeadline`.
    static func callDeadline(_ deadline: Duration, forCallArrivingAt now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        // Durations too long to add (`.seconds(.max)`) mean no deadline.
        deadline >= .seconds(Int64.max / 4) ? now.advanced(by: .seconds(Int64.max / 4)) : now.advanced(by: deadline)
    }
}
