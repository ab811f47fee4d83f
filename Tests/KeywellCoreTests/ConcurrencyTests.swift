import Foundation
import KeywellProtocol
import KeywellSystem
import Testing

@testable import KeywellCore

@Suite struct ConcurrencyTests {
    @Test func manyThreadsShareOneStore() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        try store.setSearchList(["login", "work"])
        let failures = Protected<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            let keychain = thread % 2 == 0 ? "login" : "work"
            do {
                for index in 0..<50 {
                    let account = "t\(thread)-\(index)"
                    _ = try store.add(genp(account, "s", [WireKey.valueData: data(account), WireKey.useKeychain: .string(keychain)]))
                    let found = try store.copyMatching(genp(account, "s") + returnData)
                    if found != [[WireKey.valueData: data(account)]] { failures.withLock { $0.append("\(account): \(found)") } }
                    if index % 10 == 0 {
                        try store.update(genp(account, "s"), ["labl": .string("seen")])
                        _ = try store.info(keychain)
                        _ = try store.listKeychains()
                    }
                }
                try store.delete(genp("t\(thread)-0", "s"))
            } catch {
                failures.withLock { $0.append("thread \(thread): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let remaining = try store.copyMatching([WireKey.class: .string("genp")] + limitAll)
        #expect(remaining.count == 8 * 49)
    }

    @Test func lockingWhileReadingNeverReturnsWrongData() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("a", "s", [WireKey.valueData: data("the secret")]))
        let failures = Protected<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for _ in 0..<100 {
                do {
                    if thread == 0 {
                        try store.lock("login")
                        try store.unlock("login", password: secret("pw"))
                    } else {
                        let found = try store.copyMatching(genp("a", "s") + returnData)
                        if found != [[WireKey.valueData: data("the secret")]] { failures.withLock { $0.append("\(found)") } }
                    }
                } catch let error as KeychainError where error.status == SecStatus.interactionNotAllowed {
                    continue
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
    }
}
