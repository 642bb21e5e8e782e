"""Shared fixtures: a small table of three kinds of attribute, and its domain."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import privq

ROOT = Path(__file__).resolve().parents[2]

SPEC = {
    "attributes": [
        {"name": "city", "values": ["Oslo", "Rome", "Lima"]},
        {"name": "age", "edges": [0, 18, 65, 120]},
        {"name": "smoker", "values": ["0", "1"]},
    ]
}


def rows(n: int = 300) -> dict:
    """Deterministic columns with some structure between them (no randomness)."""
    cities = ["Oslo", "Rome", "Lima"]
    city = [cities[(i * 7) % 3] for i in range(n)]
    age = [(i * 37) % 100 + (0 if city[i] == "Oslo" else 10) for i in range(n)]
    smoker = [1 if (a > 40 and i % 3 != 0) else 0 for i, a in enumerate(age)]
    return {"city": city, "age": age, "smoker": smoker}


@pytest.fixture
def domain() -> privq.Domain:
    return privq.Domain(SPEC)


@pytest.fixture
def data() -> dict:
    return rows()


@pytest.fixture(scope="session")
def privq_bin() -> Path:
    """The `privq` program of this checkout: $PRIVQ_BIN, else target/debug/privq.
    Missing, the test fails (it is never skipped)."""
    path = Path(os.environ.get("PRIVQ_BIN", ROOT / "target" / "debug" / "privq"))
    assert path.is_file(), (
        f"the privq program is not at {path}: build it (cargo build -p privq) or set PRIVQ_BIN"
    )
    return path
