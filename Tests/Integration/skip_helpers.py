"""Skips that speak (docs/contributing.md, "Time limits and skips"): a test that cannot run on
this machine skips with its reason, which `pytest -rs` prints; but under CI (`CI` set to
anything but empty, 0 or false: `.ci/run` sets CI=true) it fails instead, because there the
machine is made to run everything, and a skip would hide a product path (the direct socket, a
root-only check) behind a green run."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def cannot_run(reason: str) -> None:
    """Skips with `reason`, or fails with it under CI. Never returns."""
    if in_ci():
        pytest.fail(f"{reason} (CI must run this test: a skip would hide a product path)")
    pytest.skip(reason)


def kernel_pins_peers() -> bool:
    """SO_PEERPIDFD (Linux 6.5): without it keywelld serves no direct socket (docs/design.md)."""
    major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    return (major, minor) >= (6, 5)
