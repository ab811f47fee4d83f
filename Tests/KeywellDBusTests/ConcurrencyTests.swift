import Foundation
import KeywellDBus
import Testing

@Suite("Many callers at once", .serialized)
struct ConcurrencyTests {
    @Test func slowHandlerDoesNotDelayAnotherClient() throws {
        let fixture = try ServiceFixture()
        let otherClient = try fixture.bus.connect()
        let gate = UUID().uuidString
        let slowDone = DispatchSemaphore(value: 0)
        Thread {
            _ = try? fixture.call("Hold", [.string(gate)])
            slowDone.signal()
        }.start()
        #expect(HandlerGates.shared.waitUntilHeld(gate), "the slow call never reached its handler")

        // Answered while the slow handler still holds its worker (the gate is shut until below).
        #expect(try fixture.call("Echo", [.string("fast")], timeout: .seconds(20), on: otherClient) == [.string("fast")])
        #expect(slowDone.wait(timeout: .now()) == .timedOut, "the slow call ended before its gate opened")
        HandlerGates.shared.open(gate)
        #expect(slowDone.wait(timeout: .now() + 30) == .success)
        otherClient.close()
    }

    @Test func placementChoosesTheHandlerThread() throws {
        let fixture = try ServiceFixture()
        #expect(try fixture.call("Where", []) == [.string("io")])
        #expect(try fixture.call("WhereOnWorker", []) == [.string("worker")])
        // Large arguments are decoded and handled on a worker whatever the object prefers.
        let large: [DBusValue] = [.bytes([UInt8](repeating: 7, count: 64 << 10))]
        #expect(try fixture.call("Where", large) == [.string("worker")])
        let manyStrings: [DBusValue] = [.array(elementSignature: .string, (0..<2000).map { .string("entry \($0)") })]
        #expect(try fixture.call("Where", manyStrings) == [.string("worker")])
        #expect(try fixture.call("Where", [.variant(.variant(.bytes([UInt8](repeating: 1, count: 20_000))))]) == [.string("worker")])
        #expect(try fixture.call("Where", [.string("small"), .stringVariantDict(["k": .uint32(1)])]) == [.string("io")])
    }

    @Test func callsOnTheIOThreadAnswerWhileAWorkerIsBusy() throws {
        let fixture = try ServiceFixture()
        let otherClient = try fixture.bus.connect()
        let gate = UUID().uuidString
        let slowDone = DispatchSemaphore(value: 0)
        Thread {
            _ = try? fixture.call("Hold", [.string(gate)])
            slowDone.signal()
        }.start()
        #expect(HandlerGates.shared.waitUntilHeld(gate), "the slow call never reached its handler")
        // Answered while the slow handler still holds its worker: the I/O thread is free.
        #expect(try fixture.call("Where", [], timeout: .seconds(20), on: otherClient) == [.string("io")])
        #expect(slowDone.wait(timeout: .now()) == .timedOut)
        HandlerGates.shared.open(gate)
        #expect(slowDone.wait(timeout: .now() + 30) == .success)
        otherClient.close()
    }

    /// A call placed off the loop does not wait for a worker to wake: the thread that read it
    /// runs it and an idle worker takes the loop over.
    @Test func aCallPlacedOffTheLoopRunsOnTheThreadThatReadIt() throws {
        let fixture = try ServiceFixture()
        let otherClient = try fixture.bus.connect()
        let leader = try fixture.call("ThreadID")
        let offLoop = LockedValue<[DBusValue]?>(nil)
        let done = DispatchSemaphore(value: 0)
        let gate = UUID().uuidString
        Thread {
            offLoop.value = try? fixture.call("ThreadIDOffLoopHeld", [.string(gate)])
            done.signal()
        }.start()
        #expect(HandlerGates.shared.waitUntilHeld(gate), "the off-loop call never reached its handler")
        // While the first leader runs the slow call, another thread leads the loop.
        let nextLeader = try fixture.call("ThreadID", on: otherClient)
        #expect(nextLeader != leader)
        #expect(try fixture.call("Where", on: otherClient) == [.string("io")])
        HandlerGates.shared.open(gate)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(offLoop.value == leader)
        #expect(try fixture.call("WhereOnWorker") == [.string("worker")])
        otherClient.close()
    }

    /// A reply bigger than the socket takes at once is written out while the next call placed on
    /// the loop runs, not after it (docs/dbus-layer.md): that call runs off the loop while its
    /// rest is queued. Before, the loop ran it first, and the big reply waited for the whole of it.
    @Test func aBigReplyIsNotHeldUpByTheNextCallPlacedOnTheLoop() throws {
        let fixture = try ServiceFixture()
        let otherClient = try fixture.bus.connect()
        let bigGate = UUID().uuidString, nextGate = UUID().uuidString
        let big = LockedValue<Int?>(nil)
        let bigDone = DispatchSemaphore(value: 0)
        // 8 MiB: many times what a Unix socket holds, so its rest is queued when its handler returns.
        let size: UInt32 = 8 << 20
        Thread {
            if case .bytes(let bytes)? = try? fixture.call("BigOnLoop", [.string(bigGate), .uint32(size)], timeout: .seconds(60)).first {
                big.value = bytes.count
            }
            bigDone.signal()
        }.start()
        #expect(HandlerGates.shared.waitUntilHeld(bigGate), "the big call never reached its handler")
        // The next call is sent while the loop is busy; once the bus has answered a later call of
        // the same client, it has passed the first on towards the service.
        let threadsBefore = ServiceFixture.holdOnLoopThreads.value.count
        try otherClient.callWithoutReply(destination: ServiceFixture.name, path: ServiceFixture.path,
                                         interface: ServiceFixture.interfaceName, member: "HoldOnLoop", arguments: [.string(nextGate)])
        try otherClient.ping("org.freedesktop.DBus", path: "/org/freedesktop/DBus")
        HandlerGates.shared.open(bigGate)
        #expect(HandlerGates.shared.waitUntilHeld(nextGate), "the next call never reached its handler")
        // The big reply arrives while the next handler still holds its thread (its gate is shut).
        #expect(bigDone.wait(timeout: .now() + 30) == .success, "the big reply waited for the next handler")
        #expect(big.value == Int(size))
        #expect(Array(ServiceFixture.holdOnLoopThreads.value.dropFirst(threadsBefore)) == ["worker"])
        HandlerGates.shared.open(nextGate)
        otherClient.close()
    }

    /// Twelve handlers inside at the same moment: they run in parallel, whatever the machine's
    /// speed (the time they take is the benchmarks' business).
    @Test func manySlowHandlersRunInParallel() throws {
        let fixture = try ServiceFixture()
        let gate = UUID().uuidString
        // Real threads: concurrentPerform would only run as many callers as there are cores.
        let group = DispatchGroup()
        let failures = LockedValue(0)
        for _ in 0..<12 {
            group.enter()
            Thread {
                do { _ = try fixture.call("Hold", [.string(gate)]) } catch { failures.mutate { $0 += 1 } }
                group.leave()
            }.start()
        }
        let allInside = HandlerGates.shared.waitUntilHeld(gate, count: 12)
        HandlerGates.shared.open(gate)
        #expect(allInside, "12 handlers were never inside at once")
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(failures.value == 0)
    }

    @Test func manyClientsConcurrently() throws {
        let fixture = try ServiceFixture()
        let clients = try (0..<8).map { _ in try fixture.bus.connect() }
        let failures = LockedValue(0)
        let callsPerThread = 200
        // Two threads per connection: calls on one connection from several threads at once.
        DispatchQueue.concurrentPerform(iterations: clients.count * 2) { index in
            let client = clients[index % clients.count]
            for call in 0..<callsPerThread {
                let payload: [DBusValue] = [.string("\(index)-\(call)"), .uint32(UInt32(call)), .stringVariantDict(["i": .int32(Int32(index))])]
                do {
                    let reply = try fixture.call("Echo", payload, on: client)
                    if reply != payload { failures.mutate { $0 += 1 } }
                } catch {
                    failures.mutate { $0 += 1 }
                }
            }
        }
        #expect(failures.value == 0)
        for client in clients { client.close() }
    }

    @Test func malformedCallsInterleavedWithGoodOnes() throws {
        let fixture = try ServiceFixture()
        let errors = LockedValue(0)
        let good = LockedValue(0)
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            for call in 0..<100 {
                if call % 2 == 0 {
                    do {
                        _ = try fixture.call("CountKeys", [.int32(Int32(call))])
                    } catch let error as DBusError {
                        if error.name == DBusError.Name.invalidArgs { errors.mutate { $0 += 1 } }
                    } catch {}
                } else if (try? fixture.call("CountKeys", [.stringVariantDict(["k": .int32(1)])])) == [.uint32(1)] {
                    good.mutate { $0 += 1 }
                }
            }
        }
        #expect(errors.value == 200)
        #expect(good.value == 200)
    }
}

@Suite("Stopping")
struct StoppingTests {
    /// The daemon's shape: main thread parked in run(), SIGTERM handler calls close().
    @Test func closeFromAnotherThreadEndsRun() throws {
        let fixture = try ServiceFixture()
        let returned = DispatchSemaphore(value: 0)
        Thread {
            fixture.server.run()
            returned.signal()
        }.start()
        #expect(returned.wait(timeout: .now() + 0.2) == .timedOut)
        DispatchQueue.global().async { fixture.server.close() }
        #expect(returned.wait(timeout: .now() + 5) == .success)
        #expect(!fixture.server.isConnected)
        // The service is gone from the bus.
        #expect(eventually { (try? fixture.client.nameOwner(ServiceFixture.name)) == .some(nil) })
    }

    /// Replies and signals queued just before close() still go out.
    @Test func closeFlushesWhatWasSent() throws {
        let fixture = try ServiceFixture()
        let received = LockedValue(0)
        _ = try fixture.client.addMatch(DBusMatchRule(interface: "org.keywell.Bye", member: "Gone")) { _ in received.mutate { $0 += 1 } }
        for _ in 0..<50 { try fixture.server.emitSignal(path: "/", interface: "org.keywell.Bye", member: "Gone") }
        fixture.server.close()
        #expect(eventually { received.value == 50 })
    }
}
