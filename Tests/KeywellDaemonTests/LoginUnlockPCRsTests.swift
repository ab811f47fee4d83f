import CKeywellTPM
import Foundation
import KeywellProtocol
import Testing

@testable import KeywellDaemon

/// The PCR list of `keywell login-unlock enable --pcrs` (docs/login-unlock.md, "Binding to the
/// boot state"): what it accepts, its caps, and that they are the C side's.
@Suite struct LoginUnlockPCRsTests {
    @Test func parsesIndicesInAnyOrderOnce() throws {
        let pcrs = try LoginUnlockPCRs(parsing: "7, 0,7")
        #expect(pcrs.list == [0, 7])
        #expect(pcrs.mask == 0b1000_0001)
        #expect(pcrs.text == "0,7")
        #expect(try LoginUnlockPCRs(parsing: "23").mask == 1 << 23)
        #expect(try LoginUnlockPCRs(parsing: "") == .none)
        #expect(!LoginUnlockPCRs.none.isBound)
    }

    @Test(arguments: ["24", "-1", "7,", ",7", "7;0", "x", "07 1", "٣", "+7", "100", String(repeating: "0,", count: 40)])
    func refusesWhatIsNotAList(_ text: String) {
        #expect(throws: LoginUnlockPCRs.Problem.self) { try LoginUnlockPCRs(parsing: text) }
    }

    @Test func capsTheCount() throws {
        #expect(try LoginUnlockPCRs(parsing: "0,1,2,3,4,5,6,7").list.count == LoginUnlockPCRs.maxCount)
        #expect(throws: LoginUnlockPCRs.Problem.self) { try LoginUnlockPCRs(parsing: "0,1,2,3,4,5,6,7,8") }
        #expect(throws: LoginUnlockPCRs.Problem.self) { try LoginUnlockPCRs(mask: 0x1FF) }
        #expect(throws: LoginUnlockPCRs.Problem.self) { try LoginUnlockPCRs(mask: 1 << 24) }
    }

    /// One contract: the Swift caps are the ones the C side enforces.
    @Test func capsAreTheCSides() throws {
        #expect(LoginUnlockPCRs.maxCount == Int(KW_TPM_MAX_PCRS))
        #expect(LoginUnlockPCRs.indices.count == Int(KW_TPM_PCR_COUNT))
        #expect(kw_tpm_pcr_mask_valid(try LoginUnlockPCRs(parsing: "0,1,2,3,4,5,6,23").mask) == 1)
        #expect(kw_tpm_pcr_mask_valid(0x1FF) == 0)
        #expect(kw_tpm_pcr_mask_valid(1 << 24) == 0)
    }

    /// The enrolment file keeps the list as numbers, and refuses one over the caps.
    @Test func storedAsAList() throws {
        let data = try JSONEncoder().encode(try LoginUnlockPCRs(parsing: "0,7"))
        #expect(String(decoding: data, as: UTF8.self) == "[0,7]")
        #expect(try JSONDecoder().decode(LoginUnlockPCRs.self, from: data).text == "0,7")
        #expect(throws: (any Error).self) { try JSONDecoder().decode(LoginUnlockPCRs.self, from: Data("[24]".utf8)) }
        #expect(throws: (any Error).self) { try JSONDecoder().decode(LoginUnlockPCRs.self, from: Data("[0,1,2,3,4,5,6,7,8]".utf8)) }
    }
}
