import CSodium

/// Locked memory for small secrets that live for one call (a KWallet password on its way between
/// D-Bus and an item, `SecretBytes(transientCount:)`), in slots carved from regions that
/// `sodium_malloc` made once: guarded and locked as every `SecretBytes` is, but without five system
/// calls a secret (a `sodium_malloc` maps, guards and locks its pages, and its `sodium_free` undoes
/// all three), which doubled KWallet's `readPassword` (docs/kwallet.md, "Passwords in memory"). A
/// slot is zeroed when its secret is freed. The price: no guard page between two slots, only around
/// each region; a secret that is kept (a key, a keychain's password) still gets a `sodium_malloc`
/// of its own.
final class SecretSlots: Sendable {
    /// The pool `SecretBytes(transientCount:)` draws from: slots of 256 bytes, 64 to a region
    /// (16 KiB, the pages a region keeps resident once used), at most 64 regions (1 MiB locked).
    static let shared = SecretSlots(slotSize: 256, slotsPerRegion: 64, maximumRegions: 64)

    /// The largest secret a slot takes; a longer one gets its own `sodium_malloc`.
    let slotSize: Int
    let slotsPerRegion: Int
    /// Past this many regions in use, a secret gets its own `sodium_malloc`.
    let maximumRegions: Int

    private struct Pool {
        var regions: [UInt] = []
        /// Free slots' addresses (as integers: the pool only hands them out and takes them back).
        var free: [UInt] = []
    }

    private let pool = Protected(Pool())

    init(slotSize: Int, slotsPerRegion: Int, maximumRegions: Int) {
        self.slotSize = slotSize
        self.slotsPerRegion = slotsPerRegion
        self.maximumRegions = maximumRegions
    }

    /// Only once every slot is back (the shared pool lives as long as the process).
    deinit {
        let regions = pool.read { $0.regions }
        for region in regions { sodium_free(UnsafeMutableRawPointer(bitPattern: region)) }
    }

    /// A zeroed slot for `count` bytes, or nil when `count` is over `slotSize` or every region is in use.
    func take(_ count: Int) -> UnsafeMutableRawPointer? {
        guard count <= slotSize else { return nil }
        let (slotSize, slotsPerRegion, maximumRegions) = (slotSize, slotsPerRegion, maximumRegions)
        let address: UInt? = pool.withLock { pool in
            if pool.free.isEmpty {
                guard pool.regions.count < maximumRegions else { return nil }
                SecretMemory.ensureSodiumInitialized()
                guard let region = sodium_malloc(slotSize * slotsPerRegion) else { return nil }
                // sodium_malloc fills a region with a marker, not zeros.
                SecretMemory.wipe(region, count: slotSize * slotsPerRegion)
                let base = UInt(bitPattern: region)
                pool.regions.append(base)
                for index in (0..<slotsPerRegion).reversed() { pool.free.append(base + UInt(index * slotSize)) }
            }
            return pool.free.popLast()
        }
        return address.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
    }

    /// Zeroes the slot and takes it back.
    func give(_ slot: UnsafeMutableRawPointer) {
        SecretMemory.wipe(slot, count: slotSize)
        let address = UInt(bitPattern: slot)
        pool.withLock { $0.free.append(address) }
    }

    /// Slots handed out and not yet given back.
    var inUse: Int {
        let slotsPerRegion = slotsPerRegion
        return pool.read { $0.regions.count * slotsPerRegion - $0.free.count }
    }
}
