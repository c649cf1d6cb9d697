"""The one runner plays every kind of player exactly as the game loops before it did (tests/golden/runner.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN_DIR))

from runner_golden import GOLDEN, fingerprints  # noqa: E402


@pytest.mark.slow
def test_the_runner_records_the_golden_games(tmp_path: Path) -> None:
    stored = json.loads(GOLDEN.read_text())
    found = json.loads(json.dumps(fingerprints(tmp_path)))
    assert sorted(found) == sorted(stored)
    for case in stored:
        assert found[case] == stored[case], f"{case}: the games differ from tests/golden/runner.json"
