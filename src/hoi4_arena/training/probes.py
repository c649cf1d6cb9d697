"""Linear probes: how much of the game's state a frozen representation holds, read out linearly.

Two halves, shared by `scripts/probe_encoders.py` (encoders) and the memory study (memory states):

- `facts_for_session(path)`: per 200 ms decision of a recorded session, the game's facts from its
  ARENA log (arena-log.jsonl, each line with the frame it was read at), folded up to the decision's
  anchor frame exactly as `value_data.read_game` and the reader's `Decision.arena` fold them. The
  facts (`FACTS`), seen from the recorded side (the manifest's `side`):

      day         float  the game day (hours / 24 of the last line read)
      army        int    0/1: the side has an army (setup milestone `army`, `gamelog.setup_steps_shown`)
      front       int    0/1: one of its armies has the enemy as its front (milestone `front`)
      offensive   int    0/1: one of its armies holds an offensive plan (milestone `offensive`)
      own_side    int    0 BLU, 1 RED: which country the recorded player plays
      provinces   float  provinces the side controls (its latest `day` line)

  Milestones count from the first line that shows them, as `gamelog.setup_milestones` does: once
  reached, a step stays reached.
- `probe(features_train, facts_train, features_test, facts_test)`: for each fact a linear read-out
  fitted on the train rows and scored on the test rows, beside the trivial predictor fitted on the same
  train rows, so a probe that learned nothing reads as the baseline. Integer (or bool) facts are
  classes: multinomial logistic regression (L2, full-batch LBFGS from zero weights), scored by
  accuracy against the train majority class. Float facts are regression: closed-form ridge, scored by
  held-out R^2 against the train mean (an R^2 at or below 0 is no better than the mean). Features are
  standardised with the train rows' mean and spread. There is no randomness anywhere: the same inputs
  give the same numbers.

Try: .venv/bin/python -m hoi4_arena.training.probes runs/demo-b/demos/scripted-g0000-plains-0-s0-BLU
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState, setup_steps_shown
from hoi4_arena.sessions.reader import SessionReader

FACTS: dict[str, str] = {
    "day": "regression",
    "army": "class",
    "front": "class",
    "offensive": "class",
    "own_side": "class",
    "provinces": "regression",
}
"""The facts `facts_for_session` reads, by name, with the kind of probe each gets."""
SIDES = ("BLU", "RED")
L2 = 1e-3
"""Default L2 weight of both probes (on standardised features; the loss is a mean over rows)."""
LBFGS_STEPS = 200


def facts_for_session(path: str | Path) -> dict[str, np.ndarray]:
    """The session's `FACTS` per decision (arrays of length = its decisions, in decision order).

    Decisions are the reader's (`SessionReader.windows()`), the same the data loader cuts. UserError
    when the session has no ARENA log lines, names no recorded side, or holds a malformed line.
    """
    reader = SessionReader(path)
    side = reader.manifest.side
    if side not in SIDES:
        raise UserError(
            f"{reader.path}: its manifest names no recorded side (side {side!r}), so no fact has an owner"
        )
    if not reader.log_records:
        raise UserError(f"{reader.path}: arena-log.jsonl holds no ARENA line, so it tells no fact")
    state, reached = ArenaState(), set()
    rows: dict[str, list[float]] = {name: [] for name in FACTS}
    for lines in reader.arena_lines_by_decision():
        for line in lines:
            if line.kind == "start":  # a log holding several games: the last one counts
                state, reached = ArenaState(), set()
            state.update(line)
            reached |= {step for step, shown in setup_steps_shown(line, side).items() if shown}
        own = state.sides.get(side)
        rows["day"].append(state.h / 24.0)
        for step in ("army", "front", "offensive"):
            rows[step].append(float(step in reached))
        rows["own_side"].append(float(SIDES.index(side)))
        rows["provinces"].append(float(own.controlled) if own is not None else 0.0)
    return {
        name: np.asarray(values, np.float64 if kind == "regression" else np.int64)
        for (name, kind), values in zip(FACTS.items(), rows.values(), strict=True)
    }


# --- the probes ---------------------------------------------------------------------------------------


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = train.mean(axis=0)
    spread = train.std(axis=0)
    spread = np.where(spread > 1e-8, spread, 1.0)  # a constant feature carries nothing: leave it at 0
    return (train - mean) / spread, (test - mean) / spread


def _r2(truth: np.ndarray, guess: np.ndarray) -> float | None:
    total = float(((truth - truth.mean()) ** 2).sum())
    if total <= 0:
        return None  # a constant target: R^2 says nothing
    return 1.0 - float(((truth - guess) ** 2).sum()) / total


def ridge(x: np.ndarray, y: np.ndarray, l2: float = L2) -> tuple[np.ndarray, float]:
    """Weights and intercept minimising mean((x w + b - y)^2) + l2 |w|^2, in closed form."""
    x_mean, y_mean = x.mean(axis=0), float(y.mean())
    xc, yc = x - x_mean, y - y_mean
    n, d = xc.shape
    gram = xc.T @ xc / n + l2 * np.eye(d)
    w = np.linalg.solve(gram, xc.T @ yc / n)
    return w, y_mean - float(x_mean @ w)


def logistic(x: np.ndarray, labels: np.ndarray, classes: int, l2: float = L2, steps: int = LBFGS_STEPS):
    """Weights (d, classes) and biases minimising mean cross-entropy + l2 |W|^2 (LBFGS from zeros)."""
    import torch

    xt = torch.as_tensor(x, dtype=torch.float64)
    yt = torch.as_tensor(labels, dtype=torch.long)
    w = torch.zeros(x.shape[1], classes, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([w, b], max_iter=steps, line_search_fn="strong_wolfe", tolerance_grad=1e-9)

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(xt @ w + b, yt) + l2 * (w * w).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return w.detach().numpy(), b.detach().numpy()


def _probe_class(x_train, y_train, x_test, y_test, l2: float, steps: int) -> dict[str, Any]:
    classes, index = np.unique(y_train, return_inverse=True)
    majority = classes[np.bincount(index).argmax()]
    if len(classes) == 1:
        guess_train = np.full(len(y_train), classes[0])
        guess_test = np.full(len(y_test), classes[0])
    else:
        w, b = logistic(x_train, index, len(classes), l2, steps)
        guess_train = classes[(x_train @ w + b).argmax(axis=1)]
        guess_test = classes[(x_test @ w + b).argmax(axis=1)]
    return {
        "kind": "class",
        "metric": "accuracy",
        "score": float((guess_test == y_test).mean()),
        "baseline": float((y_test == majority).mean()),
        "train_score": float((guess_train == y_train).mean()),
        "balanced": _balanced(y_test, guess_test),
        "classes": [int(c) for c in classes],
    }


def _balanced(truth: np.ndarray, guess: np.ndarray) -> float:
    """Mean per-class recall over the classes present in `truth` (the majority guess scores 1/classes)."""
    present = np.unique(truth)
    return float(np.mean([(guess[truth == c] == c).mean() for c in present]))


def _probe_regression(x_train, y_train, x_test, y_test, l2: float) -> dict[str, Any]:
    w, b = ridge(x_train, y_train, l2)
    mean = float(y_train.mean())
    return {
        "kind": "regression",
        "metric": "r2",
        "score": _r2(y_test, x_test @ w + b),
        "baseline": _r2(y_test, np.full(len(y_test), mean)),
        "train_score": _r2(y_train, x_train @ w + b),
        "mae": float(np.abs(x_test @ w + b - y_test).mean()),
        "baseline_mae": float(np.abs(mean - y_test).mean()),
    }


def probe(
    features_train: np.ndarray,
    facts_train: dict[str, np.ndarray],
    features_test: np.ndarray,
    facts_test: dict[str, np.ndarray],
    *,
    l2: float = L2,
    steps: int = LBFGS_STEPS,
) -> dict[str, dict[str, Any]]:
    """Per fact: the linear probe's held-out score beside the trivial baseline's (module docstring).

    features_* are (N, D) rows (one per decision); facts_* map a fact name to (N,) targets: integer or
    bool arrays are classes, float arrays regression targets. Each result holds `kind`, `metric`
    (accuracy or r2), `score` and `baseline` on the test rows, `train_score`, `n_train`, `n_test`,
    and per kind `balanced` accuracy and `classes`, or `mae` and `baseline_mae`. A score is None where
    it is undefined (R^2 of a constant test target).
    """
    x_train = np.asarray(features_train, np.float64)
    x_test = np.asarray(features_test, np.float64)
    if x_train.ndim != 2 or x_test.ndim != 2 or x_train.shape[1] != x_test.shape[1]:
        raise ValueError(f"features must be (N, D) with one D, got {x_train.shape} and {x_test.shape}")
    if not len(x_train) or not len(x_test):
        raise ValueError("probes need at least one train and one test row")
    if set(facts_train) != set(facts_test):
        raise ValueError(f"train and test facts differ: {sorted(facts_train)} vs {sorted(facts_test)}")
    if not np.isfinite(x_train).all() or not np.isfinite(x_test).all():
        raise ValueError("features hold NaN or infinity")
    x_train, x_test = _standardise(x_train, x_test)
    results: dict[str, dict[str, Any]] = {}
    for name in facts_train:
        y_train, y_test = np.asarray(facts_train[name]), np.asarray(facts_test[name])
        if len(y_train) != len(x_train) or len(y_test) != len(x_test):
            raise ValueError(
                f"fact {name}: {len(y_train)}/{len(y_test)} targets for {len(x_train)}/{len(x_test)} rows"
            )
        if np.issubdtype(y_train.dtype, np.floating):
            result = _probe_regression(
                x_train, y_train.astype(np.float64), x_test, y_test.astype(np.float64), l2
            )
        else:
            result = _probe_class(
                x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64), l2, steps
            )
        results[name] = {**result, "n_train": len(y_train), "n_test": len(y_test)}
    return results


def probe_table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    """A markdown table: one row per representation, one column per fact, "score (baseline)" in each
    (accuracy for classes, R^2 for regression)."""
    facts: list[str] = []
    for per_fact in results.values():
        facts += [f for f in per_fact if f not in facts]

    def cell(result: dict[str, Any] | None) -> str:
        if result is None:
            return "-"
        score, base = result["score"], result["baseline"]
        text = lambda v: "n/a" if v is None or not math.isfinite(v) else f"{v:.3f}"  # noqa: E731
        return f"{text(score)} ({text(base)})"

    metric = {}
    for per_fact in results.values():
        for name, result in per_fact.items():
            metric.setdefault(name, "acc" if result["metric"] == "accuracy" else "R2")
    head = "| representation | " + " | ".join(f"{f} {metric[f]}" for f in facts) + " |"
    rule = "|---|" + "---|" * len(facts)
    rows = [
        f"| {name} | " + " | ".join(cell(per.get(f)) for f in facts) + " |" for name, per in results.items()
    ]
    return "\n".join([head, rule, *rows])


if __name__ == "__main__":
    try:
        facts = facts_for_session(sys.argv[1])
    except UserError as error:
        sys.exit(f"error: {error}")
    print(json.dumps({name: values.tolist() for name, values in facts.items()}))
