"""Where the test suite's time goes: a pytest plugin that counts each test's CPU, and a report of the counts.

Each test's row holds the CPU of the test process during the test (setup, call and teardown), the CPU of
the child processes it reaped in that time (the commands a test starts), and its wall time. Rows go to
one JSON-lines file per test process under HOI4_ARENA_TEST_CPU (default runs/test-cpu), so it works
with pytest-xdist's workers:

    rm -rf runs/test-cpu
    PYTHONPATH=scripts make test PYTEST_ARGS="-p pytest_cpu"
    .venv/bin/python scripts/pytest_cpu.py runs/test-cpu --top 30

The report prints the totals, each worker's sum (how even the workers' loads were), then the test files
and the single tests that cost the most. A child's CPU counts only once it is reaped: the processes Ray
starts for itself are not counted, and a test that mostly waits (wall far over CPU) is shown as such.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import signal
import time
from pathlib import Path

import pytest

_ENV = "HOI4_ARENA_TEST_CPU"
_out = None


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    global _out
    if _out is None:
        folder = Path(os.environ.get(_ENV, "runs/test-cpu"))
        folder.mkdir(parents=True, exist_ok=True)
        _out = (folder / f"cpu-{os.getpid()}.jsonl").open("a")
    own, children = _cpu()
    began = time.time()
    started = time.perf_counter()
    yield
    own_after, children_after = _cpu()
    row = {
        "id": item.nodeid,
        "self": round(own_after - own, 4),
        "child": round(children_after - children, 4),
        "wall": round(time.perf_counter() - started, 4),
        "start": round(began, 3),
    }
    _out.write(json.dumps(row) + "\n")
    _out.flush()


def report(folder: Path, top: int) -> None:
    files = sorted(folder.glob("cpu-*.jsonl"))
    if not files:
        raise SystemExit(f"{folder}: no cpu-*.jsonl files (run pytest with -p pytest_cpu first)")
    workers = {
        f.name: [json.loads(line) for line in f.read_text().splitlines() if line.strip()] for f in files
    }
    rows = [r for rs in workers.values() for r in rs]
    own, child, wall = (sum(r[k] for r in rows) for k in ("self", "child", "wall"))
    print(
        f"{len(rows)} tests: CPU {own + child:.0f} s ({own:.0f} s in test processes, {child:.0f} s in children)"
    )
    print(f"wall {wall:.0f} s summed over the tests")
    for name, rs in workers.items():
        print(f"  {name}: {len(rs)} tests, wall {sum(r['wall'] for r in rs):.0f} s")
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for r in rows:
        entry = by_file[r["id"].split("::")[0]]
        entry[0] += r["self"] + r["child"]
        entry[1] += r["child"]
        entry[2] += r["wall"]
        entry[3] += 1
    print(f"\nfiles by CPU (top {top}): cpu  of-it-children  wall  tests  file")
    for name, (cpu, children, w, n) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{cpu:7.1f} {children:7.1f} {w:7.1f} {n:5d}  {name}")
    print(f"\ntests by wall (top {top}): wall  cpu  test")
    for r in sorted(rows, key=lambda r: -r["wall"])[:top]:
        print(f"{r['wall']:7.1f} {r['self'] + r['child']:7.1f}  {r['id'][:140]}")
    idle = sum(max(0.0, r["wall"] - r["self"] - r["child"]) for r in rows)
    print(f"\ntests by waiting, wall over CPU (top {top} of {idle:.0f} s in all): waiting  wall  test")
    for r in sorted(rows, key=lambda r: r["self"] + r["child"] - r["wall"])[:top]:
        print(f"{r['wall'] - r['self'] - r['child']:7.1f} {r['wall']:7.1f}  {r['id'][:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, nargs="?", default=Path("runs/test-cpu"))
    parser.add_argument("--top", type=int, default=25, help="rows in each table")
    args = parser.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the report quietly, no traceback
    report(args.folder, args.top)


if __name__ == "__main__":
    main()
