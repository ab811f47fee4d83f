"""The documentation names only files that exist (docs/README.md): every path into the
repository that README, SECURITY.md, pam/README.md or a page of docs/ names — `Sources/…`,
`Tests/…`, `scripts/…`, `pam/…`, `docs/…`, `dbus/…`, `Fuzz/…`, `man/…` — and every source file
named alone in backticks (`WireCodec.swift`) is there. A glob (`test_attack_*.py`) must match
something. CHANGELOG.md is history and may name what is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "pam" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOPS = ("Sources/", "Tests/", "scripts/", "pam/", "docs/", "dbus/", "Fuzz/", "man/", "completions/", ".ci/")
PATH = re.compile(r"(?<![\w/.-])((?:%s)[\w./+*-]*)" % "|".join(re.escape(top) for top in TOPS))
SOURCE_NAME = re.compile(r"`([A-Za-z0-9_+-]+\.(?:swift|c|py|sh))`")
# Where a file named alone may be: the repository's own folders, not a build's.
SEARCHED = ("Sources", "Tests", "scripts", "pam", "Fuzz")


def source_names() -> set[str]:
    names = {path.name for folder in SEARCHED for path in (ROOT / folder).rglob("*") if "build" not in path.parts}
    return names | {path.name for path in ROOT.iterdir()}


def missing_references(pages: list[Path]) -> list[str]:
    names = source_names()
    missing = []
    for page in pages:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for match in PATH.finditer(line):
                reference = match.group(1).rstrip(".,:;)")
                if "*" in reference:
                    if not list(ROOT.glob(reference)):
                        missing.append(f"{page.name}:{number}: {reference} matches nothing")
                elif not (ROOT / reference).exists():
                    missing.append(f"{page.name}:{number}: {reference}")
            for match in SOURCE_NAME.finditer(line):
                if match.group(1) not in names:
                    missing.append(f"{page.name}:{number}: {match.group(1)} (no such file)")
    return missing


def test_the_documentation_names_only_files_that_exist():
    assert missing_references(PAGES) == []


def test_the_check_finds_a_missing_file(tmp_path):
    """The control: a page naming files that are gone is caught, by path, by glob and by name."""
    page = tmp_path / "page.md"
    page.write_text("See `Sources/KeywellCore/Gone.swift` and `WireConversion.swift`; "
                    "`Tests/Integration/test_nothing_*.py`; `Sources/KeywellProtocol/CallReach.swift` is here.\n")
    assert missing_references([page]) == [
        "page.md:1: Sources/KeywellCore/Gone.swift",
        "page.md:1: Tests/Integration/test_nothing_*.py matches nothing",
        "page.md:1: WireConversion.swift (no such file)",
    ]
