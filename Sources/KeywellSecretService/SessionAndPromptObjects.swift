import KeywellDBus

/// `/org/freedesktop/secrets/session/<n>`: `org.freedesktop.Secret.Session`.
struct SessionObject: SessionMethods {
    let context: ServiceContext
    let number: UInt64

    func close(call: CallContext) throws(DBusError) {
        try context.sessions.close(number, caller: call.sender)
    }
}

/// `/org/freedesktop/secrets/prompt/<n>`: `org.freedesktop.Secret.Prompt`. What the prompt does
/// next waits for the reply to be out: its `Completed` must not reach the caller first.
struct PromptObject: PromptMethods {
    let context: ServiceContext
    let number: UInt64

    func prompt(windowId: String, call: CallContext) throws(DBusError) {
        call.afterReply(try context.prompts.start(number, caller: call.sender, windowID: windowId))
    }

    func dismiss(call: CallContext) throws(DBusError) {
        call.afterReply(try context.prompts.dismiss(number, caller: call.sender))
    }
}
