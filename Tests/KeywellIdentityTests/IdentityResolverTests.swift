import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

@testable import KeywellIdentity

/// Identities of real callers on a real private dbus-daemon: this test process is the caller.
@Suite("Resolving callers on a real bus", .serialized)
struct IdentityResolverTests {
    @Test func aCallerIsItsExecutableAndItsHashUnlessOnlyRootCanReplaceIt() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        let service = try bus.connect()
        let caller = try bus.connect()
        defer { service.close(); caller.close() }
        let resolver = IdentityResolver(runtimeDirectory: bus.runtimeDirectory)
        let identity = try resolver.resolve(caller.uniqueName!, on: service)
        let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(identity.string == (try ExpectedProgramIdentity.of(path)))
        #expect(identity.strength == .weak)
        #expect(identity.strengthReason.contains("LD_PRELOAD"))
        // The second connection of the same program does not hash it again; a program only
        // root can replace (this runner, built by root in root's folders) is never hashed.
        let another = try bus.connect()
        defer { another.close() }
        #expect(try resolver.resolve(another.uniqueName!, on: service) == identity)
        #expect(resolver.digests.filesHashed == (ExpectedProgramIdentity.isRootOnly(path) ? 0 : 1))
    }

    @Test func aCallerOfAnotherUserIsRefused() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        let service = try bus.connect()
        defer { service.close() }
        // A resolver serving another uid sees this process as a stranger.
        let resolver = IdentityResolver(runtimeDirectory: bus.runtimeDirectory, userID: getuid() &+ 4242)
        #expect(throws: IdentityError.otherUser(uid: getuid())) { try resolver.resolve(service.uniqueName!, on: service) }
    }

    @Test func aNameThatLeftHasNoIdentity() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        let service = try bus.connect()
        defer { service.close() }
        let caller = try bus.connect()
        let name = caller.uniqueName!
        caller.close()
        let resolver = IdentityResolver(runtimeDirectory: bus.runtimeDirectory)
        // The bus may need a moment to notice the socket closed; until then the caller is alive.
        let deadline = ContinuousClock.now + .seconds(30)
        while (try? service.nameHasOwner(name)) == true, ContinuousClock.now < deadline { usleep(10_000) }
        #expect(throws: IdentityError.self) { try resolver.resolve(name, on: service) }
    }

    @Test func identitiesAreCachedPerConnectionAndForgottenWhenItLeaves() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        let service = try bus.connect()
        defer { service.close() }
        let identities = ApplicationIdentities(resolver: IdentityResolver(runtimeDirectory: bus.runtimeDirectory))
        let caller = try bus.connect()
        let name = caller.uniqueName!
        #expect(identities.cached(name, on: service) == nil)
        let identity = try identities.identity(of: name, on: service)
        #expect(try identities.cached(name, on: service)?.get() == identity)
        #expect(identities.count == 1)
        caller.close()
        // NameOwnerChanged reaches the cache: wait for it (a positive signal), with a hang guard.
        let deadline = ContinuousClock.now + .seconds(30)
        while identities.cached(name, on: service) != nil, ContinuousClock.now < deadline { usleep(10_000) }
        #expect(identities.cached(name, on: service) == nil)
        #expect(identities.count == 0)
    }

    @Test func aNewBusStartsAFreshCacheThoughItReusesTheNames() throws {
        let identities = ApplicationIdentities(resolver: IdentityResolver(runtimeDirectory: nil))
        let first = try PrivateSessionBus()
        defer { first.stop() }
        let firstService = try first.connect()
        let firstCaller = try first.connect()
        defer { firstService.close(); firstCaller.close() }
        let name = firstCaller.uniqueName!
        _ = try identities.identity(of: name, on: firstService)
        #expect(identities.cached(name, on: firstService) != nil)

        // A bus started later numbers its connections from the start again.
        let second = try PrivateSessionBus()
        defer { second.stop() }
        let secondService = try second.connect()
        let secondCaller = try second.connect()
        defer { secondService.close(); secondCaller.close() }
        try #require(secondCaller.uniqueName == name, "the new bus gave other names; the test proves nothing")
        #expect(identities.cached(name, on: secondService) == nil)
        _ = try identities.identity(of: name, on: secondService)
        #expect(identities.cached(name, on: secondService) != nil)
        #expect(identities.cached(name, on: firstService) == nil)
        #expect(identities.count == 1)
    }

    /// The credentials of a new caller asked for as its call goes to a worker (`prefetch`, from
    /// the I/O thread): its identity is the one worked out without it; a question is kept only
    /// for a caller still unknown on the connection the cache follows, goes when the caller
    /// leaves, and at most `maximumAsked` wait at once.
    @Test func aPrefetchedQuestionServesTheFirstCallOnly() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        let service = try bus.connect()
        defer { service.close() }
        let identities = ApplicationIdentities(resolver: IdentityResolver(runtimeDirectory: bus.runtimeDirectory))
        let first = try bus.connect()
        defer { first.close() }
        // Before any caller made the cache follow this connection, nothing is asked.
        identities.prefetch(first.uniqueName!, on: service)
        #expect(identities.pendingQuestions == 0)
        let expected = try identities.identity(of: first.uniqueName!, on: service)
        // A known caller is not asked about again.
        identities.prefetch(first.uniqueName!, on: service)
        #expect(identities.pendingQuestions == 0)

        let second = try bus.connect()
        defer { second.close() }
        identities.prefetch(second.uniqueName!, on: service)
        identities.prefetch(second.uniqueName!, on: service)
        #expect(identities.pendingQuestions == 1)
        #expect(try identities.identity(of: second.uniqueName!, on: service) == expected)
        #expect(identities.pendingQuestions == 0)

        // A caller that leaves before its call is served takes its question with it.
        let leaving = try bus.connect()
        let leavingName = leaving.uniqueName!
        identities.prefetch(leavingName, on: service)
        #expect(identities.pendingQuestions == 1)
        leaving.close()
        let deadline = ContinuousClock.now + .seconds(30)
        while identities.pendingQuestions != 0, ContinuousClock.now < deadline { usleep(10_000) }
        #expect(identities.pendingQuestions == 0)
        // Once it is known to have left, it is not asked about again.
        identities.prefetch(leavingName, on: service)
        #expect(identities.pendingQuestions == 0)

        // Names nobody owns: the bus answers each with an error, and only the newest are kept.
        for index in 0..<(ApplicationIdentities.maximumAsked + 6) { identities.prefetch(":1.\(90_000 + index)", on: service) }
        #expect(identities.pendingQuestions == ApplicationIdentities.maximumAsked)
        #expect(throws: IdentityError.self) { try identities.identity(of: ":1.\(90_000 + ApplicationIdentities.maximumAsked)", on: service) }
        #expect(identities.pendingQuestions == ApplicationIdentities.maximumAsked - 1)
    }

    @Test func theCacheOfCallersIsBounded() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        let service = try bus.connect()
        defer { service.close() }
        let identities = ApplicationIdentities(resolver: IdentityResolver(runtimeDirectory: bus.runtimeDirectory), capacity: 2)
        let callers = try (0..<3).map { _ in try bus.connect() }
        defer { callers.forEach { $0.close() } }
        for caller in callers { _ = try identities.identity(of: caller.uniqueName!, on: service) }
        #expect(identities.count == 2)
        #expect(identities.cached(callers[0].uniqueName!, on: service) == nil)
        #expect(identities.cached(callers[2].uniqueName!, on: service) != nil)
    }
}
