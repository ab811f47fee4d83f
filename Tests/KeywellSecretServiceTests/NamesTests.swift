import KeywellSecretService
import Testing

@Test func busNameAndPathFollowTheSpecification() {
    #expect(SecretServiceNames.busName == "org.freedesktop.secrets")
    #expect(SecretServiceNames.servicePath == "/org/freedesktop/secrets")
}
