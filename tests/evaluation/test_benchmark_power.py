"""scripts/benchmark_power.py: the chance that the benchmark's paired test meets an aim."""

from __future__ import annotations

import subprocess
import sys

import pytest

from project_scripts import SCRIPTS, load_script


def test_power_sums_the_splits_that_meet_the_aim() -> None:
    power = load_script("benchmark_power").power
    # Six pairs at alpha 0.05: only six discordant wins of six (p = 2/64) pass; a sure player against a
    # coin wins a pair alone half the time.
    assert power(0.5, 0.5, 6, 0.05, 0.0) == pytest.approx(0.5**6)
    # No true gain: the test's one-sided error stays under alpha / 2.
    assert power(0.5, 0.0, 80, 0.01, 0.0) <= 0.005
    # More gain, more power; a higher bar on the gain itself, less.
    assert power(0.5, 0.1, 80, 0.01, 0.15) < power(0.5, 0.2, 80, 0.01, 0.15) < power(0.5, 0.3, 80, 0.01, 0.15)
    assert power(0.5, 0.2, 80, 0.01, 0.25) < power(0.5, 0.2, 80, 0.01, 0.15)
    with pytest.raises(ValueError):
        power(0.8, 0.3, 80, 0.01, 0.15)


def test_the_table_and_its_bad_input() -> None:
    script = [sys.executable, str(SCRIPTS / "benchmark_power.py")]
    done = subprocess.run([*script, "--gains", "0.1,0.3"], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("the aim: a paired gain >= +15% with McNemar p < 0.01 on 80 pairs")
    assert [line.split()[0] for line in lines[2:]] == ["+10%", "+30%"]
    one, both = (float(v.strip().rstrip("%")) for v in lines[3].split("|")[1:])
    assert both == pytest.approx(one * one / 100, abs=0.1)
    for bad in (["--gains", "x"], ["--base", "0.9", "--gains", "0.2"], ["--pairs", "0"]):
        refused = subprocess.run([*script, *bad], capture_output=True, text=True)
        assert refused.returncode != 0 and len(refused.stderr.splitlines()) == 1, refused.stderr
