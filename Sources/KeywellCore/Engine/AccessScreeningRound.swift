import KeywellProtocol

/// One call's access screening (docs/access-control.md, "Who is asked"), the one place the
/// verdicts are sorted: each item the call would take is judged by the caller's screen as it is
/// read, hidden ones are left out, untrusted ones are kept and noted, and one question about
/// all the noted ones is asked at the end, before any secret leaves or any change is made.
/// Searches, updates, deletes, the export and the gnome-keyring export all screen through it;
/// a round may span several keychains (`admitted` once per keychain, `askOnce` once).
struct AccessScreeningRound<Pending> {
    private let screen: any ItemAccessScreening
    private let interaction: UserInteraction
    private let untrustedNeedAnswer: Bool
    private var pending: [Pending] = []

    /// `interaction`: the call's `u_AuthUI`. Skip leaves untrusted items out unasked; Fail lets the
    /// screen refuse the question with `errSecInteractionNotAllowed`. `untrustedNeedAnswer`:
    /// false for a search that returns no secret, which returns untrusted items unasked
    /// (attributes are no secret) and only leaves hidden ones out.
    init(_ screen: any ItemAccessScreening, interaction: UserInteraction = .allow, untrustedNeedAnswer: Bool = true) {
        self.screen = screen
        self.interaction = interaction
        self.untrustedNeedAnswer = untrustedNeedAnswer
    }

    /// Judges `candidates` in order and returns those the caller may have (untrusted ones
    /// included, on the condition of the question), at most `limit`: the candidates after the
    /// limit is reached are not judged, so nobody is asked about them. `list` gives a
    /// candidate's access list; `item` names it for the screen (built only when the list alone
    /// does not decide); `pending` makes the note for the question. With `asking` false,
    /// untrusted candidates are kept unnoted (their keychain is locked: the change that
    /// follows refuses them anyway).
    mutating func admitted<Candidates: Sequence>(
        _ candidates: Candidates, limit: Int = .max, asking: Bool = true,
        list: (Candidates.Element) -> AccessList, item: (Candidates.Element) -> AccessItem,
        pending note: (Candidates.Element, AccessItem) -> Pending
    ) -> [Candidates.Element] {
        var kept: [Candidates.Element] = []
        for candidate in candidates {
            guard kept.count < limit else { break }
            let candidateList = list(candidate)
            switch screen.verdict(candidateList, item: { item(candidate) }) {
            case .hidden:
                continue
            case .mustAsk where untrustedNeedAnswer:
                if interaction == .skip { continue }
                if asking { pending.append(note(candidate, item(candidate).trusting(candidateList))) }
            case .mustAsk, .allowed:
                break
            }
            kept.append(candidate)
        }
        return kept
    }

    /// Whether `askOnce` will ask: some item was noted for the question.
    var asks: Bool { !pending.isEmpty }

    /// The one question about every noted item; none noted, no question. `labelled` turns the
    /// notes into what the question shows. Throws the screen's refusal (`errSecAuthFailed` when
    /// the person denies, `errSecInteractionNotAllowed` when the call forbids asking).
    func askOnce(_ labelled: ([Pending]) throws(KeychainError) -> [AccessItem]) throws(KeychainError) {
        guard !pending.isEmpty else { return }
        try screen.ask(about: try labelled(pending), interactionAllowed: interaction == .allow)
    }
}

extension KeychainStore {
    /// An untrusted item of a keychain file, noted for the question (its label is read then).
    typealias ItemToAsk = (file: KeychainFile, rowID: Int64, item: AccessItem)
}

extension AccessScreeningRound where Pending == KeychainStore.ItemToAsk {
    /// The positions in `items` (rows of `file`) of those the caller may have, as `admitted`;
    /// `lists` by row id (an item missing there trusts any application).
    mutating func admitted(
        _ items: [KeychainItem], of file: KeychainFile, lists: [Int64: AccessList], limit: Int = .max, asking: Bool = true
    ) -> [Int] {
        admitted(items.indices, limit: limit, asking: asking,
                 list: { items[$0].rowID.flatMap { lists[$0] } ?? .anyApplication },
                 item: { AccessItem(keychain: file.location.path, reference: KeychainStore.reference(to: items[$0], in: file), label: "") },
                 pending: { (file, items[$0].rowID!, $1) })
    }

    /// The question, its items named by their labels as the keychains hold them.
    func askOnce(of store: KeychainStore) throws(KeychainError) {
        try askOnce { entries throws(KeychainError) in try store.labelled(entries) }
    }
}
