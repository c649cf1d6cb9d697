"""The memory study's table (docs/research.md) from train-memory reports: one row per report, then the probes
of the first report's perception alone and the trivial predictor (the same for every memory).

Each probe column is the held-out score of a linear read-out of the memory's output: accuracy for army,
front, offensive and own side, R^2 for day and provinces (training/probes.py).

Try: python scripts/memory_table.py /tmp/research-out/split-*/report.json
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

FACTS = ("day", "army", "front", "offensive", "own_side", "provinces")


def number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def table(paths: list[str]) -> str:
    reports = [json.loads(Path(p).read_text()) for p in paths]
    head = "| memory | seed | carry | width | memory params | held-out loss | kind acc | pointer median / mean | "
    lines = [head + " | ".join(FACTS) + " |", "|---" * (8 + len(FACTS)) + "|"]
    for r in reports:
        held, probes = r["held_out"], r["probes"]["memory"]
        carry = ("yes" if r["carry"] else "no") + (f", burn-in {r['burn_in']}" if r["burn_in"] else "")
        pointer = f"{number(held['pointer_distance_median'], 0)} / {number(held['pointer_distance_mean'], 0)}"
        cells = [r["memory"], str(r["seed"]), carry, str(r["hidden"]), f"{r['parameters']['memory']:,}"]
        cells += [number(held["loss"]), number(held["kind_accuracy"]), pointer]
        lines.append("| " + " | ".join(cells + [number(probes[f]["score"], 2) for f in FACTS]) + " |")
    first = reports[0]["probes"]["perception"]
    for name, key in (("perception alone", "score"), ("trivial predictor", "baseline")):
        lines.append(
            f"| {name} |" + " |" * 7 + " " + " | ".join(number(first[f][key], 2) for f in FACTS) + " |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    print(table(sys.argv[1:]))
