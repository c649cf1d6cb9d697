"""The tiny policy widths the tests build, train and play with, written once: a whole policy runs in a few
milliseconds a decision on a CPU, so a training smoke test costs seconds.

`TINY` is the tests' policy; `TINY_BC` the one the behaviour-cloning tests learn the marker game with
(a wider cell map and head: the marker BC needs them to learn its pointing in 100 steps). A test imports
them as `from tiny import TINY` (tests/ is on the path: pytest puts the root conftest's folder there; a
script such as tests/golden/runner_golden.py adds it itself).
"""

from __future__ import annotations

TINY = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
TINY_BC = dict(width=8, summary_dim=16, cell_dim=24, fovea_dim=16, hidden=48, head_dim=48, position_dim=16)


def as_option(widths: dict) -> str:
    """The widths as a command line's `--policy` value (`width=8,summary_dim=16,...`)."""
    return ",".join(f"{k}={v}" for k, v in widths.items())
