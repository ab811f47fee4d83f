import KeywellProtocol

/// Runs the body of an Apple-shaped function: success is errSecSuccess, a KeychainError its
/// status. Every failure of this library is a KeychainError, so nothing else can escape.
func osStatus(_ body: () throws(KeychainError) -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch {
        return error.status
    }
}
