"""The attack of the integrity MACs done through an index instead of a row: someone who can
write the keychain file rewrites the key bytes of the bank item's entry in the index SQLite
searches free-form attributes by (item_attribute_lookup), so that the index says the bank's item
has server=evil.example. Every row and every MAC is untouched; SQLite trusts the index. A lookup
of evil.example must not print the bank's password (docs/file-format.md, "Indexes are not
trusted"), and the daemon must say the keychain's index disagrees with its rows."""

from __future__ import annotations

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import KeywellBus, session  # noqa: F401
from security_figures import record
from test_attack_tampered_attributes import BANK_PASSWORD, _keychain, _sqlite, _stop_daemon, _unlock

BANK = b"bank.example"
EVIL = b"evil.example"  # as long as BANK: the edit keeps every length and offset


def _edit_index_pages(path: str, index: str) -> int:
    """Replaces BANK by EVIL in the pages of `index` only; returns how many it replaced."""
    page_size = int(_sqlite(path, "PRAGMA page_size"))
    pages = [int(line) for line in _sqlite(path, f"SELECT pageno FROM dbstat WHERE name = '{index}'").split()]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    replaced = 0
    for page in pages:
        start, end = (page - 1) * page_size, page * page_size
        position = data.find(BANK, start, end)
        while position != -1:
            data[position:position + len(EVIL)] = EVIL
            replaced += 1
            position = data.find(BANK, position + len(EVIL), end)
    with open(path, "r+b") as f:
        f.write(data)
    return replaced


def test_an_index_edited_on_disk_returns_no_other_items_password(session: KeywellBus):
    session.create_login()
    session.secret_tool("store", "--label=Alpha", "server", "alpha.example", "user", "dave", input="alpha-password", check=True)
    session.secret_tool("store", "--label=Bank", "server", "bank.example", "user", "carol", input=BANK_PASSWORD, check=True)
    # Before the edit: no evil.example item, the bank's found by its own server (not vacuous).
    assert session.secret_tool("lookup", "server", "evil.example").returncode != 0
    assert session.secret_tool("lookup", "server", "bank.example").stdout == BANK_PASSWORD.encode()

    path = _keychain(session)
    _stop_daemon(session)
    replaced = _edit_index_pages(path, "item_attribute_lookup")
    assert replaced == 1, f"{replaced} index entries rewritten"
    _unlock(session)

    result = session.secret_tool("lookup", "server", "evil.example")
    leaked = BANK_PASSWORD.encode() in result.stdout
    refused = not leaked and result.returncode != 0
    # Still found by what it really holds, through the index entries left alone.
    by_user = session.secret_tool("lookup", "user", "carol")
    warned = "index disagrees with its rows" in session.daemon_log()

    record("free-form attribute index entry rewritten on disk (server=bank.example made to say evil.example)",
           f"lookup of evil.example: {'bank password returned' if leaked else 'nothing returned'}",
           "nothing returned", refused)
    assert refused, result.stdout.decode(errors="replace") + session.daemon_log()[-2000:]
    assert by_user.stdout == BANK_PASSWORD.encode(), by_user.stderr.decode() + session.daemon_log()[-2000:]
    assert warned, session.daemon_log()[-2000:]


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
