"""Rows for `keywell-bench security-report`: a test that measures something worth showing in
SECURITY.md's table records it here. Without KEYWELL_SECURITY_FIGURES (plain pytest runs) the
rows are simply dropped."""

from __future__ import annotations

import json
import os


def record(check: str, figure: str, target: str, met: bool) -> None:
    path = os.environ.get("KEYWELL_SECURITY_FIGURES")
    if not path:
        return
    with open(path, "a") as f:
        f.write(json.dumps({"check": check, "figure": figure, "target": target, "met": bool(met)}) + "\n")
