"""An attacker who can change an export file on its way (a shared folder, a USB stick) tries to
make `keywell import` take something it did not write: cut it at every record boundary, flip a
bit in every header byte and throughout the records, swap and repeat records, add bytes. Each
import must fail with nothing imported (docs/export-import.md, "File format"). The real keywell
and keywelld of two private accounts; the passphrase goes through standard input.
"""

from __future__ import annotations

from pathlib import Path

from keywell_helpers import user_tmp  # noqa: F401 (a fixture)
from security_figures import record
from test_export_import import PASSPHRASE, accounts, export, fill  # noqa: F401 (accounts is a fixture)

HEADER = 65


def chunks(content: bytes) -> list[tuple[int, int]]:
    """(start, end) of each length-prefixed chunk after the header."""
    spans, offset = [], HEADER
    while offset < len(content):
        end = offset + 4 + int.from_bytes(content[offset:offset + 4], "big")
        spans.append((offset, end))
        offset = end
    return spans


def variants(content: bytes) -> list[tuple[str, bytes]]:
    spans = chunks(content)
    made = [(f"cut at {end}", content[:end]) for _, end in spans[:-1]]
    made += [(f"cut at {HEADER}", content[:HEADER]), ("one byte short", content[:-1])]
    # Every header byte (each is a field of its own, bound to the first record as associated
    # data), and in every chunk each byte of its length, the stream's tag byte (its first), one in
    # the middle of the sealed record and its last (the MAC's): a flipped bit anywhere else in a
    # sealed record fails the same authentication as these, and each import costs a full Argon2id.
    positions = list(range(HEADER))
    for start, end in spans:
        positions += [*range(start, start + 4), start + 4, (start + 4 + end) // 2, end - 1]
    made += [(f"bit flip at {index}", content[:index] + bytes([content[index] ^ (1 << (index % 8))]) + content[index + 1:])
             for index in positions]
    (a, b), (c, d) = spans[1], spans[2]
    made.append(("records swapped", content[:a] + content[c:d] + content[a:b] + content[d:]))
    made.append(("record repeated", content[:b] + content[a:b] + content[b:]))
    made.append(("bytes appended", content + b"\0" * 4))
    made.append(("final record appended again", content + content[spans[-1][0]:spans[-1][1]]))
    return made


def test_altered_export_files_import_nothing(accounts, user_tmp: Path):
    source = accounts()
    fill(source)
    # The test user writes the export and reads the altered copies root makes beside it.
    exported = user_tmp / "all.kwexport"
    export(source, exported, "--all")
    content = exported.read_bytes()
    target = accounts()
    target.run("create-keychain", "-p", "pw", "login")
    target.run("create-keychain", "-p", "pw", "work")

    refused, accepted = 0, []
    altered = variants(content)
    for name, bytes_ in altered:
        path = user_tmp / "altered.kwexport"
        path.write_bytes(bytes_)
        result = target.run("import", "-k", "login", str(path), input=PASSPHRASE + "\n", check=False)
        if result.returncode != 0 and "nothing was imported" in result.stderr:
            refused += 1
        else:
            accepted.append(name)
    items_taken = len(target.run("dump-keychain", "login", "work").stdout.splitlines())
    record("export file altered: cut at every record boundary, bits flipped in every header byte and across the records, "
           "records swapped, repeated or appended",
           f"{refused} of {len(altered)} altered files refused, {items_taken} lines of items imported",
           "all refused, nothing imported", refused == len(altered) and items_taken == 0)
    assert not accepted, accepted
    assert items_taken == 0
    # The untouched file still imports.
    assert "4 added" in target.run("import", "-k", "login", str(exported), input=PASSPHRASE + "\n").stdout
