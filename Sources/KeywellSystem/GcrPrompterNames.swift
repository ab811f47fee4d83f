/// The names of gcr's system prompter protocol (GNOME's own dialog, `/usr/libexec/gcr-prompter`),
/// spoken by `GcrSystemPrompt`, written once here (docs/prompts.md, "GNOME's dialog"). gcr calls
/// the protocol internal: these are the names gcr 3 and 4 (Debian 12's) answer to, the ones
/// gnome-keyring and pinentry-gnome3 use.
package enum GcrPrompterNames {
    /// The session-bus name the prompter owns, D-Bus-activatable where gcr is installed.
    package static let busName = "org.gnome.keyring.SystemPrompter"
    package static let objectPath = "/org/gnome/keyring/Prompter"
    package static let interface = "org.gnome.keyring.internal.Prompter"
    package static let beginPrompting = "BeginPrompting"
    package static let performPrompt = "PerformPrompt"
    package static let stopPrompting = "StopPrompting"

    /// The callback object keywelld exports on its own connection, one per prompt: its interface
    /// is dbus/org.gnome.keyring.internal.Prompter.Callback.xml, from which its table and dispatch
    /// are generated. Where keywelld's callback objects live (a counter follows).
    package static let callbackPathPrefix = "/org/keywell/GcrPrompt/p"

    /// `PerformPrompt`'s prompt types.
    package static let confirmType = "confirm"
    package static let passwordType = "password"

    /// `PromptReady`'s replies: continue, cancel, and nothing yet (the first call, or a prompt
    /// that was closed without an answer).
    package static let replyYes = "yes"
    package static let replyNo = "no"
    package static let replyNone = ""

    /// The dialog's properties (GcrPrompt's property names), sent in `PerformPrompt` as `a{sv}`.
    package enum Property {
        package static let title = "title"
        package static let message = "message"
        package static let description = "description"
        package static let warning = "warning"
        package static let continueLabel = "continue-label"
        package static let cancelLabel = "cancel-label"
        package static let choiceLabel = "choice-label"
        /// A boolean: the choice check box, sent unticked, read back from `PromptReady`.
        package static let choiceChosen = "choice-chosen"
        package static let callerWindow = "caller-window"
        /// A boolean: a new password, asked twice.
        package static let passwordNew = "password-new"
    }

    /// gcr's secret exchange: a key file of one group, `public=` (and with a secret, `iv=` and
    /// `secret=`) in base64, over DH in RFC 3526's 1536-bit group.
    package static let exchangeGroup = "sx-aes-1"
    package static let exchangePublic = "public"
    package static let exchangeIV = "iv"
    package static let exchangeSecret = "secret"
}
