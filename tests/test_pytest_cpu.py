"""scripts/pytest_cpu.py: the suite's per-test CPU counts (a pytest plugin) and their report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

TESTS = """
import subprocess, sys

def test_burns_in_a_child():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)

def test_burns_here():
    sum(i * i for i in range(3_000_000))

def test_waits():
    import time
    time.sleep(0.3)
"""


def test_each_test_gets_its_own_and_its_childrens_cpu_and_the_report_reads_them(tmp_path: Path) -> None:
    (tmp_path / "test_three.py").write_text(TESTS)
    counts = tmp_path / "counts"
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS), "HOI4_ARENA_TEST_CPU": str(counts)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "pytest_cpu", "-p", "no:cacheprovider", "test_three.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (rows_file,) = counts.glob("cpu-*.jsonl")
    rows = {r["id"].split("::")[1]: r for r in map(json.loads, rows_file.read_text().splitlines())}
    assert set(rows) == {"test_burns_in_a_child", "test_burns_here", "test_waits"}
    child, here, waits = rows["test_burns_in_a_child"], rows["test_burns_here"], rows["test_waits"]
    assert child["child"] > 0.05 and child["child"] > child["self"]
    assert here["self"] > 0.05 and here["child"] == 0
    assert waits["wall"] >= 0.3 and waits["self"] + waits["child"] < waits["wall"]
    report = subprocess.run(
        [sys.executable, str(SCRIPTS / "pytest_cpu.py"), str(counts), "--top", "3"],
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("3 tests: CPU ")
    assert "test_three.py" in report.stdout and all(
        f"test_three.py::{name}" in report.stdout for name in rows
    )
    # Each test's waiting (wall over CPU) is shown; on a busy machine the other two wait too (a child
    # process starting, a core shared), so which one waits most is not fixed: the sleeper's own line is.
    waiting = report.stdout.split("tests by waiting")[1].splitlines()[1:4]
    (line,) = [line for line in waiting if "test_three.py::test_waits" in line]
    assert float(line.split()[0]) >= 0.25, report.stdout
    empty = subprocess.run(
        [sys.executable, str(SCRIPTS / "pytest_cpu.py"), str(tmp_path / "none")],
        capture_output=True,
        text=True,
    )
    assert (
        empty.returncode == 1 and "no cpu-*.jsonl files" in empty.stderr and "Traceback" not in empty.stderr
    )
