"""Per-decision advantages of recorded games, and the weights of advantage-weighted cloning (AWR).

`hoi4-arena advantage DATA --critic CKPT | --state-value CKPT` gives every decision t of every session
with a known outcome its value V_t (the critic's, from the pixels, through `critic.critic_values`; or the
state-value model's, from the ARENA state) and its n-step advantage

    A_t = V_(t+h) - V_t            (h = --horizon, 25 decisions = 5 s by default)
    A_t = outcome - V_t            when t + h reaches past the session's last decision

(the reward is the game's outcome alone, win 1, draw 0.5, loss 0, so no reward lies between t and
t + h). They are written beside the session's own files as SESSION/advantages.json (format
"hoi4-arena-advantages", with the value model's kind, file and weights hash, the horizon, the outcome,
V and A per decision, and a sha256 over all of it); the session's own files are never touched, and a
later run replaces only this file. Nothing is written before the model and every session have been
read.

`train-bc --advantage` multiplies each decision's loss by `awr_weights`: exp(A / beta), clipped at
`max_weight` (Peng et al.'s advantage-weighted regression: decisions that led to a better position than
expected are copied more, worse ones less). `AdvantageWeights` reads the files of the training sessions
and refuses, with one message naming them, sessions without a usable file (missing, damaged, or written
for another recording).

Try: hoi4-arena advantage runs/critic-data --state-value runs/state-value/state-value.pt
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hoi4_arena.data.loader import Batch, DataSettings, WindowLoader
from hoi4_arena.data.sources import SessionSource
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import weights_sha256
from hoi4_arena.terminal import progress_bar
from hoi4_arena.training.value_config import AdvantageConfig
from hoi4_arena.training.value_data import Game, value_games

ADVANTAGES = "advantages.json"
FORMAT = "hoi4-arena-advantages"
FORMAT_VERSION = 1


def n_step_advantages(values: np.ndarray, outcome: float, horizon: int) -> np.ndarray:
    """(N,) A_t = V_(t+h) - V_t, the outcome in place of V at and past the end (t + h >= N)."""
    values = np.asarray(values, np.float64)
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    ahead = np.append(values, outcome)[np.minimum(np.arange(len(values)) + horizon, len(values))]
    return ahead - values


def awr_weights(advantages: np.ndarray, beta: float, max_weight: float) -> np.ndarray:
    """min(exp(A / beta), max_weight), computed without overflow (the exponent is clipped at log(max))."""
    a = np.asarray(advantages, np.float64)
    return np.exp(np.minimum(a / beta, math.log(max_weight)))


def _checksum(payload: dict[str, Any]) -> str:
    text = json.dumps(
        {k: v for k, v in payload.items() if k != "sha256"}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(text.encode()).hexdigest()


def advantage_payload(
    session: str,
    values: np.ndarray,
    advantages: np.ndarray,
    outcome: float,
    horizon: int,
    model: dict[str, Any],
) -> dict[str, Any]:
    """The content of one session's advantages.json (write_advantages adds the checksum)."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "session": session,
        "decisions": len(values),
        "horizon": horizon,
        "outcome": outcome,
        "value_model": model,
        "values": [round(float(x), 6) for x in values],
        "advantages": [round(float(x), 6) for x in advantages],
    }


def write_advantages(folder: str | Path, payload: dict[str, Any]) -> Path:
    """Write `payload` (with its sha256) to FOLDER/advantages.json atomically."""
    path = Path(folder) / ADVANTAGES
    content = {**payload, "sha256": _checksum(payload)}
    temporary = path.with_name(ADVANTAGES + ".partial")
    temporary.write_text(json.dumps(content) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return path


def read_advantages(source: SessionSource) -> np.ndarray | str:
    """The session's advantages (N,), or why they cannot be used (a string)."""
    path = Path(source.path) / ADVANTAGES
    if not path.is_file():
        return f"no {ADVANTAGES}"
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"{ADVANTAGES} is not readable JSON ({error})"
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        return f"{ADVANTAGES} is not an advantages file"
    if content.get("format_version") != FORMAT_VERSION:
        return f"{ADVANTAGES} has format version {content.get('format_version')!r}, not {FORMAT_VERSION}"
    if content.get("sha256") != _checksum(content):
        return f"{ADVANTAGES} is damaged (its checksum does not match)"
    advantages = content.get("advantages")
    if (
        content.get("session") != source.id
        or not isinstance(advantages, list)
        or len(advantages) != source.decisions
    ):
        return (
            f"{ADVANTAGES} was written for another recording (session {content.get('session')!r} with "
            f"{content.get('decisions')} decisions; this is {source.id!r} with {source.decisions})"
        )
    return np.asarray(advantages, np.float64)


class AdvantageWeights:
    """AWR weights of the training sessions' decisions, looked up per batch (train-bc --advantage)."""

    def __init__(
        self, sessions: list[SessionSource], settings: DataSettings, beta: float, max_weight: float
    ) -> None:
        self.beta, self.max_weight = beta, max_weight
        self._weights: dict[str, np.ndarray] = {}
        self._starts: dict[str, list[int]] = {}
        refused = []
        for source in sessions:
            got = read_advantages(source)
            if isinstance(got, str):
                refused.append(f"{source.path} ({got})")
                continue
            self._weights[source.id] = awr_weights(got, beta, max_weight).astype(np.float32)
            self._starts[source.id] = [span.start for span in settings.spans(source)]
        if refused:
            listed = "; ".join(refused[:4]) + (f"; and {len(refused) - 4} more" if len(refused) > 4 else "")
            raise UserError(
                f"--advantage: {len(refused)} of {len(sessions)} training session(s) have no usable advantages: "
                f"{listed}. Write them first: hoi4-arena advantage DATA --critic CKPT (or --state-value CKPT)"
            )
        every = np.concatenate(list(self._weights.values())) if self._weights else np.zeros(0)
        self.stats = {
            "beta": beta,
            "max_weight": max_weight,
            "mean_weight": float(every.mean()) if len(every) else None,
            "clipped_share": float((every >= max_weight * (1 - 1e-6)).mean()) if len(every) else None,
        }

    def for_batch(self, batch: Batch) -> np.ndarray:
        """(B, L) float32: each row's decisions' weights (0 past the session's end: padding)."""
        rows = batch.arrays["region"].shape
        out = np.zeros(rows, np.float32)
        for row, (sid, span) in enumerate(batch.keys):
            weights, start = self._weights[sid], self._starts[sid][span]
            part = weights[start : start + rows[1]]
            out[row, : len(part)] = part
        return out


# --- the command ---


def _value_model(config: AdvantageConfig, device: torch.device) -> tuple[Any, dict[str, str], str]:
    """The chosen model, loaded (a wrong file is refused here, before any work): a function from games
    to V per decision (by session id), its description, and the view layout the sessions must fit."""
    if config.state_value is not None:
        from hoi4_arena.training.state_value import load_state_value

        model = load_state_value(config.state_value)
        described = {
            "kind": "state-value",
            "checkpoint": str(config.state_value),
            "weights_sha256": model.weights_sha256,
        }
        return (lambda games: {g.id: model.net.predict(g.features) for g in games}), described, "cpu"
    from hoi4_arena.training.critic import critic_values, data_settings, load_critic

    checkpoint = load_critic(config.critic, device)
    policy, run = checkpoint.policy, checkpoint.extra["critic"]["config"]
    # The critic's own windows: its values depend on how much memory it was trained with.
    settings = data_settings(
        policy, window=run["window"], lead_in=run["lead_in"], batch=config.batch, hold_gb=0, seed=0
    )

    def values(games: list[Game]) -> dict[str, np.ndarray]:
        with WindowLoader(settings, config.workers) as loader:
            return critic_values(policy, loader, [g.source for g in games], device)

    described = {
        "kind": "critic",
        "checkpoint": str(config.critic),
        "weights_sha256": weights_sha256(policy.state_dict()),
    }
    return values, described, policy.config.layout


def compute_advantages(config: AdvantageConfig) -> dict[str, Any]:
    """Write SESSION/advantages.json for every session of DATA with a known outcome; the summary."""
    started = time.monotonic()
    if config.threads:
        torch.set_num_threads(config.threads)
    from hoi4_arena.training.run_control import device_of

    value_of, described, layout = _value_model(config, device_of(config.device))
    data = value_games(config.data, config.sources, layout, seed=0, need_val=False)
    games = data.train + data.val
    values = value_of(games)

    written = []
    every = []
    with progress_bar(transient=True) as bar:
        task = bar.add_task("writing advantages", total=len(games))
        for game in games:
            v = values[game.id]
            a = n_step_advantages(v, game.outcome, config.horizon)
            every.append(a)
            payload = advantage_payload(game.id, v, a, game.outcome, config.horizon, described)
            written.append(str(write_advantages(game.source.path, payload)))
            bar.update(task, advance=1)
    a_all = np.concatenate(every) if every else np.zeros(0)
    return {
        "sessions": len(written),
        "written": written,
        "skipped": data.skipped,
        "value_model": described,
        "horizon": config.horizon,
        "decisions": len(a_all),
        "advantage": {
            "mean": float(a_all.mean()) if len(a_all) else None,
            "mean_abs": float(np.abs(a_all).mean()) if len(a_all) else None,
            "positive_share": float((a_all > 0).mean()) if len(a_all) else None,
            "min": float(a_all.min()) if len(a_all) else None,
            "max": float(a_all.max()) if len(a_all) else None,
        },
        "seconds": time.monotonic() - started,
    }
