import CDBus

/// Owns one reference to a libdbus message. Messages are reference-counted atomically by libdbus
/// and read-only once sent or received, so a received message may be decoded on any thread.
// @unchecked: libdbus reference-counts messages atomically; a message is read by one thread at a time.
final class MessageRef: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over a reference the caller already owns.
    init(owning pointer: OpaquePointer) { self.pointer = pointer }

    /// Adds a reference (for messages libdbus only lends, e.g. inside a filter).
    init(retaining pointer: OpaquePointer) {
        dbus_message_ref(pointer)
        self.pointer = pointer
    }

    deinit { dbus_message_unref(pointer) }

    var type: Int32 { dbus_message_get_type(pointer) }
    var path: String? { string(dbus_message_get_path(pointer)) }
    var interface: String? { string(dbus_message_get_interface(pointer)) }
    var member: String? { string(dbus_message_get_member(pointer)) }
    var sender: String? { string(dbus_message_get_sender(pointer)) }
    var destination: String? { string(dbus_message_get_destination(pointer)) }
    var errorName: String? { string(dbus_message_get_error_name(pointer)) }
    var signature: DBusSignature { DBusSignature(unchecked: string(dbus_message_get_signature(pointer)) ?? "") }
    var expectsReply: Bool { dbus_message_get_no_reply(pointer) == 0 }

    private func string(_ c: UnsafePointer<CChar>?) -> String? { c.map { String(cString: $0) } }

    // MARK: Building

    /// A method call with its arguments, names checked first (both connection kinds send these).
    static func methodCall(destination: String?, path: String, interface: String?, member: String,
                           arguments: [DBusValue] = [], autoStart: Bool = true) throws(DBusError) -> MessageRef {
        if let destination { try NameValidation.busName(destination) }
        try NameValidation.objectPath(path)
        if let interface { try NameValidation.interface(interface) }
        try NameValidation.member(member)
        guard let message = dbus_message_new_method_call(destination, path, interface, member) else { throw .noMemory() }
        let call = MessageRef(owning: message)
        call.setAutoStart(autoStart)
        try call.append(arguments)
        return call
    }

    static func signal(path: String, interface: String, member: String) throws(DBusError) -> MessageRef {
        try NameValidation.objectPath(path)
        try NameValidation.interface(interface)
        try NameValidation.member(member)
        guard let message = dbus_message_new_signal(path, interface, member) else { throw .noMemory() }
        return MessageRef(owning: message)
    }

    /// An error reply. An invalid error name becomes `Failed` (keeping the text) rather than aborting.
    /// The caller owns the result.
    static func errorReply(to call: OpaquePointer, _ error: DBusError) throws(DBusError) -> OpaquePointer {
        let name = (try? NameValidation.errorName(error.name)) != nil ? error.name : DBusError.Name.failed
        let text = error.message.replacingNULs()
        guard let message = dbus_message_new_error(call, name, text) else { throw .noMemory() }
        return message
    }

    func setDestination(_ destination: String) throws(DBusError) {
        try NameValidation.busName(destination)
        guard dbus_message_set_destination(pointer, destination) != 0 else { throw .noMemory() }
    }

    func setNoReply() { dbus_message_set_no_reply(pointer, 1) }
    func setAutoStart(_ autoStart: Bool) { dbus_message_set_auto_start(pointer, autoStart ? 1 : 0) }

    func append(_ arguments: [DBusValue]) throws(DBusError) {
        try MessageEncoder.append(arguments, to: pointer)
    }

    func arguments(maximumValues: Int = .max) throws(DBusError) -> [DBusValue] {
        try MessageDecoder.decodeArguments(of: pointer, maximumValues: maximumValues)
    }

    /// For error messages: the error name and its first string argument.
    func asError() -> DBusError {
        let name = errorName ?? DBusError.Name.failed
        var text = ""
        var iter = DBusMessageIter()
        if dbus_message_iter_init(pointer, &iter) != 0, dbus_message_iter_get_arg_type(&iter) == TypeCode.string {
            var cString: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(&iter, &cString)
            if let cString { text = String(cString: cString) }
        }
        return DBusError(name: name, message: text)
    }
}

extension String {
    /// libdbus strings end at the first NUL; keep texts (error messages) whole instead.
    func replacingNULs() -> String {
        utf8.contains(0) ? String(unicodeScalars.map { $0 == "\0" ? "\u{FFFD}" : Character($0) }) : self
    }
}
