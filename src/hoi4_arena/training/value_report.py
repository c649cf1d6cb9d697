"""How well a value model predicts the winner: held-out accuracy and calibration by game day.

One report for the critic and the state-value baseline, so their numbers compare:

- `by_day`: at each report day D (10, 30, 60, 100), every held-out game still running on day D gives
  the prediction of its first decision on or after day D (one per game, so long games do not count
  more). `games`, `decisive` (not draws), `accuracy` (decisive games whose p > 0.5 agrees with the
  winner), `brier` (mean (p - outcome)^2 over all, draws scored against 0.5), `base_brier` (the same
  for the constant prediction of the training games' mean outcome: a model worth having is below it),
  `mean_p` and `mean_outcome`. A game that ended before day D is not in D's row.
- `decisions`: the same over every held-out decision (BCE too), and `calibration`, a reliability
  table (5 bins of p: count, mean p, mean outcome).

Try: .venv/bin/python -c "from hoi4_arena.training.value_report import report; print(report([[0.9]], [[12.0]], [1.0], 0.5))"
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

REPORT_DAYS = (10, 30, 60, 100)
BINS = 5


def _scores(p: np.ndarray, y: np.ndarray, base: float) -> dict:
    decisive = y != 0.5
    out = {
        "decisive": int(decisive.sum()),
        "accuracy": float(((p[decisive] > 0.5) == (y[decisive] == 1.0)).mean()) if decisive.any() else None,
        "brier": float(np.mean((p - y) ** 2)) if len(p) else None,
        "base_brier": float(np.mean((base - y) ** 2)) if len(p) else None,
        "mean_p": float(p.mean()) if len(p) else None,
        "mean_outcome": float(y.mean()) if len(p) else None,
    }
    return out


def report(
    predictions: Sequence[Sequence[float]],
    days: Sequence[Sequence[float]],
    outcomes: Sequence[float],
    base: float,
    at: Sequence[int] = REPORT_DAYS,
) -> dict:
    """The report (see the module docstring) for per-game arrays of predictions and days."""
    preds = [np.asarray(p, np.float64) for p in predictions]
    day_arrays = [np.asarray(d, np.float64) for d in days]
    ys = np.asarray(outcomes, np.float64)
    by_day = {}
    for day in at:
        picked, targets = [], []
        for p, d, y in zip(preds, day_arrays, ys, strict=True):
            later = np.flatnonzero(d >= day)
            if len(later):
                picked.append(p[later[0]])
                targets.append(y)
        p_day, y_day = np.asarray(picked), np.asarray(targets)
        by_day[str(day)] = {"games": len(picked), **_scores(p_day, y_day, base)}
    every_p = np.concatenate(preds) if preds else np.zeros(0)
    every_y = (
        np.concatenate([np.full(len(p), y) for p, y in zip(preds, ys, strict=True)]) if preds else every_p
    )
    clipped = np.clip(every_p, 1e-6, 1 - 1e-6)
    bce = -(every_y * np.log(clipped) + (1 - every_y) * np.log(1 - clipped))
    decisions = {
        "count": len(every_p),
        **_scores(every_p, every_y, base),
        "bce": float(bce.mean()) if len(bce) else None,
    }
    calibration = []
    edges = np.linspace(0, 1, BINS + 1)
    for low, high in zip(edges[:-1], edges[1:], strict=True):
        here = (every_p >= low) & ((every_p < high) if high < 1 else (every_p <= high))
        calibration.append(
            {
                "p": f"{low:.1f}-{high:.1f}",
                "count": int(here.sum()),
                "mean_p": float(every_p[here].mean()) if here.any() else None,
                "mean_outcome": float(every_y[here].mean()) if here.any() else None,
            }
        )
    return {"games": len(preds), "by_day": by_day, "decisions": decisions, "calibration": calibration}


def by_day_table(result: dict) -> str:
    """The by-day rows as a short text table (for logs and docs)."""
    lines = ["day  games  accuracy  brier  base_brier"]
    for day, row in result["by_day"].items():
        acc = "-" if row["accuracy"] is None else f"{row['accuracy']:.2f}"
        brier = "-" if row["brier"] is None else f"{row['brier']:.3f}"
        base = "-" if row["base_brier"] is None else f"{row['base_brier']:.3f}"
        lines.append(f"{day:>3}  {row['games']:>5}  {acc:>8}  {brier:>5}  {base:>10}")
    return "\n".join(lines)
