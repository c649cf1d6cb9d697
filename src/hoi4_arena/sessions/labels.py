"""Labelled inputs beside a session: the tokens an IDM gave each decision of a video without inputs.

Two files in the session folder, written by `hoi4-arena label` next to the session's own files and never
over them (manifest.json, frames.jsonl and inputs.jsonl are not touched):

    labels-idm.json    {"format": "hoi4-arena-labels", "version": 1, "source": "idm", "checkpoint",
                        "weights_sha256", "layout", "decisions", "min_logp", "created", "code_version"}
    labels-idm.jsonl   one line per decision k = 0, 1, ...: {"decision": k, "frame": anchor frame,
                        "tokens": [[kind, x, y] x 8], "logp": [8 log-likelihoods], "dropped": bool}

`dropped` marks a decision with a token less likely than the labelling's --min-logp; training skips
it. The index is written last (atomically), so a session is labelled exactly when it has the index
and the lines it counts.

Try: .venv/bin/python -m hoi4_arena.sessions.labels runs/videos/my-game
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.sessions.format import code_version, write_json_atomic

INDEX = "labels-idm.json"
LINES = "labels-idm.jsonl"
FORMAT = "hoi4-arena-labels"
VERSION = 1


@dataclass
class Labels:
    """A session's labels: tokens (n, 8, 3) int64, logp (n, 8) float32, dropped (n,) bool, the index."""

    tokens: np.ndarray
    logp: np.ndarray
    dropped: np.ndarray
    frames: np.ndarray
    index: dict[str, Any]

    def __len__(self) -> int:
        return len(self.tokens)

    def keep(self, min_logp: float | None = None) -> np.ndarray:
        """(n,) bool: decisions not dropped and, with `min_logp`, with no token less likely than it."""
        keep = ~self.dropped
        if min_logp is not None:
            keep &= self.logp.min(axis=1) >= min_logp
        return keep


def has_labels(folder: str | Path) -> bool:
    return (Path(folder) / INDEX).is_file()


def write_labels(
    folder: str | Path,
    frames: list[int],
    tokens: np.ndarray,
    logp: np.ndarray,
    min_logp: float | None,
    about: dict[str, Any],
) -> dict[str, Any]:
    """Write (replacing an earlier labelling) the labels of every decision; returns the index."""
    folder = Path(folder)
    dropped = np.zeros(len(tokens), bool) if min_logp is None else logp.min(axis=1) < min_logp
    (folder / INDEX).unlink(missing_ok=True)  # unlabelled until the new lines are complete
    tmp = folder / (LINES + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for k, frame in enumerate(frames):
            line = {
                "decision": k,
                "frame": int(frame),
                "tokens": tokens[k].tolist(),
                "logp": [round(float(v), 4) for v in logp[k]],
                "dropped": bool(dropped[k]),
            }
            handle.write(json.dumps(line, allow_nan=False) + "\n")
    tmp.replace(folder / LINES)
    index = {
        "format": FORMAT,
        "version": VERSION,
        "source": "idm",
        **about,
        "decisions": len(frames),
        "dropped": int(dropped.sum()),
        "min_logp": min_logp,
        "code_version": code_version(),
    }
    write_json_atomic(folder / INDEX, index)
    return index


def read_labels(folder: str | Path) -> Labels:
    """The labels of a session folder; UserError naming the file and the problem otherwise."""
    folder = Path(folder)
    path = folder / INDEX
    if not path.is_file():
        raise UserError(f"{folder}: not labelled (no {INDEX}); run `hoi4-arena label IDM_CKPT {folder}`")
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT or index.get("version") != VERSION:
        raise UserError(f"{path}: not a version {VERSION} labels index")
    lines = (folder / LINES).read_text(encoding="utf-8").splitlines() if (folder / LINES).is_file() else []
    if len(lines) != index.get("decisions"):
        raise UserError(
            f"{folder / LINES}: holds {len(lines)} decisions, its index says {index.get('decisions')}"
        )
    tokens = np.zeros((len(lines), 8, 3), np.int64)
    logp = np.zeros((len(lines), 8), np.float32)
    dropped = np.zeros(len(lines), bool)
    frames = np.zeros(len(lines), np.int64)
    for k, text in enumerate(lines):
        try:
            line = json.loads(text)
            if line["decision"] != k:
                raise ValueError(f"decision {line['decision']} out of order")
            tokens[k] = line["tokens"]
            logp[k] = line["logp"]
            dropped[k] = bool(line["dropped"])
            frames[k] = line["frame"]
        except (ValueError, KeyError, TypeError) as error:
            raise UserError(f"{folder / LINES}: line {k + 1}: {error}") from None
    return Labels(tokens, logp, dropped, frames, index)


if __name__ == "__main__":
    try:
        labels = read_labels(sys.argv[1])
    except UserError as error:
        sys.exit(f"error: {error}")
    print(json.dumps(labels.index, indent=2))
    for k in range(min(10, len(labels))):
        print(k, labels.tokens[k, :, 0].tolist(), labels.logp[k].round(2).tolist(), labels.dropped[k])
