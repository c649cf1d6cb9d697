"""Labelled inputs beside a session: the tokens a labeller gave each decision, apart from what was played.

Two labellers write them, each its own pair of files (`SOURCES`): `idm`, an inverse-dynamics model's
tokens for a video without inputs (`hoi4-arena label`), and `expert`, the scripted player's input from
each screen of a game someone else played (`hoi4-arena dagger`: `players/shadow.py`, its lines say
whether the label was played). Both sit next to the session's own files and never over them
(manifest.json, frames.jsonl and inputs.jsonl are not touched):

    labels-idm.json    {"format": "hoi4-arena-labels", "version": 1, "source": "idm", "checkpoint",
                        "weights_sha256", "layout", "decisions", "min_logp", "created", "code_version"}
    labels-idm.jsonl   one line per decision k = 0, 1, ...: {"decision": k, "frame": anchor frame,
                        "tokens": [[kind, x, y] x 8], "logp": [8 log-likelihoods], "dropped": bool}

`dropped` marks a decision with a token less likely than the labelling's --min-logp (an expert label:
a decision the expert gave no label, e.g. after the end panel); training skips it. The expert's files
are labels-expert.json/.jsonl, the same format with source `expert` and logp 0. The index is written last (atomically), so a session is labelled exactly when it has the index
and the lines it counts.

Try: .venv/bin/python -m hoi4_arena.sessions.labels runs/videos/my-game [idm|expert]
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

SOURCES = ("idm", "expert")
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
    played: np.ndarray | None = None
    """(n,) bool: the expert's labels that were played (their lines' `expert`); None for other sources."""

    def __len__(self) -> int:
        return len(self.tokens)

    def keep(self, min_logp: float | None = None) -> np.ndarray:
        """(n,) bool: decisions not dropped and, with `min_logp`, with no token less likely than it."""
        keep = ~self.dropped
        if min_logp is not None:
            keep &= self.logp.min(axis=1) >= min_logp
        return keep


def label_files(source: str = "idm") -> tuple[str, str]:
    """The (index, lines) file names of a labeller's labels."""
    if source not in SOURCES:
        raise ValueError(f"labels come from {' or '.join(SOURCES)}, not {source!r}")
    return f"labels-{source}.json", f"labels-{source}.jsonl"


def has_labels(folder: str | Path, source: str = "idm") -> bool:
    return (Path(folder) / label_files(source)[0]).is_file()


def labelled_sessions(folder: str | Path, source: str = "expert", pattern: str = "*") -> list[Path]:
    """The session folders directly under `folder` (named by `pattern`, e.g. a DAgger iteration's games
    folder and "dagger-i*") that carry `source` labels, in name order; a game still being played has none
    yet and is left out."""
    return [f for f in sorted(Path(folder).glob(pattern)) if f.is_dir() and has_labels(f, source)]


def write_labels(
    folder: str | Path,
    frames: list[int],
    tokens: np.ndarray,
    logp: np.ndarray,
    min_logp: float | None,
    about: dict[str, Any],
    *,
    source: str = "idm",
    dropped: np.ndarray | None = None,
    extra: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write (replacing an earlier labelling of `source`) the labels of every decision; returns the index.
    `dropped` (n,) bool marks decisions without a label beside those under `min_logp`; `extra` adds
    fields to each decision's line (the expert's: whether its label was played)."""
    folder = Path(folder)
    index_name, lines_name = label_files(source)
    unlikely = np.zeros(len(tokens), bool) if min_logp is None else logp.min(axis=1) < min_logp
    dropped = unlikely if dropped is None else unlikely | np.asarray(dropped, bool)
    (folder / index_name).unlink(missing_ok=True)  # unlabelled until the new lines are complete
    tmp = folder / (lines_name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for k, frame in enumerate(frames):
            line = {
                "decision": k,
                "frame": int(frame),
                "tokens": tokens[k].tolist(),
                "logp": [round(float(v), 4) for v in logp[k]],
                "dropped": bool(dropped[k]),
                **(extra[k] if extra is not None else {}),
            }
            handle.write(json.dumps(line, allow_nan=False) + "\n")
    tmp.replace(folder / lines_name)
    index = {
        "format": FORMAT,
        "version": VERSION,
        "source": source,
        **about,
        "decisions": len(frames),
        "dropped": int(dropped.sum()),
        "min_logp": min_logp,
        "code_version": code_version(),
    }
    write_json_atomic(folder / index_name, index)
    return index


def read_labels(folder: str | Path, source: str = "idm") -> Labels:
    """The labels of `source` of a session folder; UserError naming the file and the problem otherwise."""
    folder = Path(folder)
    index_name, lines_name = label_files(source)
    path = folder / index_name
    if not path.is_file():
        how = (
            f"run `hoi4-arena label IDM_CKPT {folder}`"
            if source == "idm"
            else "label it with hoi4-arena dagger"
        )
        raise UserError(f"{folder}: not labelled (no {index_name}); {how}")
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT or index.get("version") != VERSION:
        raise UserError(f"{path}: not a version {VERSION} labels index")
    if index.get("source", "idm") != source:
        raise UserError(f"{path}: labels of source {index.get('source')!r}, not {source!r}")
    lines_path = folder / lines_name
    lines = lines_path.read_text(encoding="utf-8").splitlines() if lines_path.is_file() else []
    if len(lines) != index.get("decisions"):
        raise UserError(
            f"{lines_path}: holds {len(lines)} decisions, its index says {index.get('decisions')}"
        )
    tokens = np.zeros((len(lines), 8, 3), np.int64)
    logp = np.zeros((len(lines), 8), np.float32)
    dropped = np.zeros(len(lines), bool)
    frames = np.zeros(len(lines), np.int64)
    played = np.zeros(len(lines), bool)
    for k, text in enumerate(lines):
        try:
            line = json.loads(text)
            if line["decision"] != k:
                raise ValueError(f"decision {line['decision']} out of order")
            tokens[k] = line["tokens"]
            logp[k] = line["logp"]
            dropped[k] = bool(line["dropped"])
            frames[k] = line["frame"]
            played[k] = line.get("expert") is True
        except (ValueError, KeyError, TypeError) as error:
            raise UserError(f"{lines_path}: line {k + 1}: {error}") from None
    return Labels(tokens, logp, dropped, frames, index, played if source == "expert" else None)


if __name__ == "__main__":
    try:
        labels = read_labels(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "idm")
    except UserError as error:
        sys.exit(f"error: {error}")
    print(json.dumps(labels.index, indent=2))
    for k in range(min(10, len(labels))):
        print(k, labels.tokens[k, :, 0].tolist(), labels.logp[k].round(2).tolist(), labels.dropped[k])
