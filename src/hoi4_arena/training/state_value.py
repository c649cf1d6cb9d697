"""The state-value baseline: P(the recorded side wins) from the ARENA state alone, never from pixels.

Each decision of each recorded game is one example: its ARENA state (training/value_data.py: the day,
both sides' divisions, strength, provinces, surrender, casualties, manpower, who declared, the setup
milestones so far) and the game's outcome for the recorded side (win 1, draw 0.5, loss 0). A small MLP
(features standardised by the training games' mean and spread, two hidden layers, one logit) is fitted
full-batch with AdamW and binary cross-entropy, each game weighted equally (a decision weighs 1 / its
game's decisions). Seconds on a CPU. The report (value_report.py) is what the pixel critic must beat:
held-out accuracy and Brier score by game day.

OUT gets `state-value.pt` (format "hoi4-arena-state-value": the weights, the feature names, the config,
the report; loading refuses another format or another feature list) and `report.json`.

Try: hoi4-arena train-state-value runs/critic-data runs/state-value
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hoi4_arena import __version__
from hoi4_arena.errors import UserError, existing_file
from hoi4_arena.gamelog import ArenaState, parse_line, setup_steps_shown
from hoi4_arena.models.checkpoint import read_torch_file
from hoi4_arena.sim.world import World
from hoi4_arena.training.run_control import adam
from hoi4_arena.training.value_config import StateValueConfig
from hoi4_arena.training.value_data import FEATURES, Game, state_features, value_games
from hoi4_arena.training.value_report import by_day_table, report

FORMAT = "hoi4-arena-state-value"
FORMAT_VERSION = 1
CHECKPOINT = "state-value.pt"
REPORT = "report.json"


class StateValueNet(nn.Module):
    """(N, features) -> (N,) logit of P(win); standardises its inputs with stored statistics."""

    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(features))
        self.register_buffer("scale", torch.ones(features))
        if hidden:
            self.net = nn.Sequential(
                nn.Linear(features, hidden),
                nn.GELU(),
                nn.Linear(hidden, hidden),
                nn.GELU(),
                nn.Linear(hidden, 1),
            )
        else:
            self.net = nn.Sequential(nn.Linear(features, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.scale).squeeze(-1)

    @torch.no_grad()
    def predict(self, features: np.ndarray) -> np.ndarray:
        """(N,) P(win) of (N, features) float32 rows."""
        self.eval()
        return (
            torch.sigmoid(self(torch.from_numpy(np.asarray(features, np.float32)))).numpy().astype(np.float64)
        )


@dataclass
class StateValueModel:
    """A loaded state-value checkpoint."""

    net: StateValueNet
    config: dict[str, Any]
    report: dict[str, Any]
    weights_sha256: str
    path: str


def _weights_sha256(net: nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(net.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def load_state_value(path: str | Path) -> StateValueModel:
    """Load `path`, refusing a file of another format or feature list (UserError saying what differs)."""
    path = existing_file(path, "state-value checkpoint")
    content = read_torch_file(path, "state-value checkpoint")
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        what = content.get("format") if isinstance(content, dict) else None
        hint = (
            " (a policy or critic checkpoint: give it with --critic)" if what == "hoi4-arena-policy" else ""
        )
        raise UserError(f"{path} is not a state-value checkpoint (format {what!r}, not {FORMAT!r}){hint}")
    if content.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"{path} has state-value format version {content.get('format_version')!r}, not {FORMAT_VERSION}"
        )
    if tuple(content["features"]) != FEATURES:
        theirs, ours = list(content["features"]), list(FEATURES)
        differ = sorted(set(theirs) ^ set(ours)) or ["their order"]
        raise UserError(
            f"{path} was trained on another ARENA feature layout (differs in {', '.join(differ[:6])}); "
            "train it again with this code's hoi4-arena train-state-value"
        )
    net = StateValueNet(len(FEATURES), int(content["config"]["hidden"]))
    net.load_state_dict(content["model"])
    net.eval()
    return StateValueModel(net, content["config"], content.get("report", {}), _weights_sha256(net), str(path))


def _stack(games: list[Game]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs, targets and weights (summing to 1, each game 1 / games) of `games`' decisions.

    The state changes when the log does (about once a game day, five decisions), so the decisions of a
    game with the same features are one row weighted by their count: the same loss, a fifth of the work.
    """
    xs, ys, ws = [], [], []
    for g in games:
        rows, counts = np.unique(g.features, axis=0, return_counts=True)
        xs.append(rows)
        ys.append(np.full(len(rows), g.outcome, np.float32))
        ws.append(counts.astype(np.float32) / len(g.features))
    w = torch.from_numpy(np.concatenate(ws))
    return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys)), w / w.sum()


def game_report(predict: Any, games: list[Game], base: float) -> dict[str, Any]:
    """The by-day report of `predict(game) -> (N,) P(win)` over `games`."""
    return report([predict(g) for g in games], [g.days for g in games], [g.outcome for g in games], base)


def fit_state_value(games: list[Game], config: StateValueConfig) -> tuple[StateValueNet, float]:
    """The model fitted to `games` (full batch, each game weighing the same), and its last training loss."""
    x, y, w = _stack(games)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        net = StateValueNet(x.shape[1], config.hidden)
    net.mean.copy_((x * w[:, None]).sum(0))
    spread = ((x - net.mean) ** 2 * w[:, None]).sum(0).sqrt()
    net.scale.copy_(torch.where(spread > 1e-6, spread, torch.ones_like(spread)))
    optimizer = adam(net.parameters(), config.lr, config.weight_decay)
    net.train()
    for _ in range(config.steps):
        loss = (nn.functional.binary_cross_entropy_with_logits(net(x), y, reduction="none") * w).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return net.eval(), float(loss.detach())


def train_state_value(config: StateValueConfig) -> dict[str, Any]:
    """Fit the state-value model on DATA's training games, report on the held-out ones, write OUT."""
    started = time.monotonic()
    out = Path(config.out)
    if (out / CHECKPOINT).exists():
        raise UserError(f"{out / CHECKPOINT} exists; choose another output folder")
    data = value_games(config.data, config.sources, val_share=config.val_share, seed=config.seed)
    if config.threads:
        torch.set_num_threads(config.threads)

    net, train_loss = fit_state_value(data.train, config)

    # --- report ---
    base = float(np.mean([g.outcome for g in data.train]))
    held_out = game_report(lambda g: net.predict(g.features), data.val, base)
    train = game_report(lambda g: net.predict(g.features), data.train, base)
    result = {
        "model": "state-value",
        "checkpoint": str(out / CHECKPOINT),
        "report": str(out / REPORT),
        "held_out": held_out,
        "train": {"by_day": train["by_day"], "decisions": train["decisions"]},
        "train_loss": train_loss,
        "base_rate": base,
        "games": {"train": len(data.train), "val": len(data.val), "held_out_by": data.held_out_by},
        "skipped": data.skipped,
        "features": list(FEATURES),
        "config": config.to_dict(),
        "seconds": None,
    }
    out.mkdir(parents=True, exist_ok=True)
    content = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "features": list(FEATURES),
        "config": config.to_dict(),
        "model": {k: v.detach().cpu() for k, v in net.state_dict().items()},
        "report": {"held_out": held_out, "base_rate": base},
        "provenance": {"data": data.describe(), "code_version": __version__},
    }
    temporary = out / (CHECKPOINT + ".partial")
    torch.save(content, temporary)
    temporary.replace(out / CHECKPOINT)
    result["weights_sha256"] = _weights_sha256(net)
    result["seconds"] = time.monotonic() - started
    (out / REPORT).write_text(json.dumps(result, indent=1) + "\n")
    result["table"] = by_day_table(held_out)
    return result


def world_value(model: StateValueModel) -> Callable[[World, str], float]:
    """A search rollout's score from the state value (record-ai --search-value): P(`side` wins) of the
    world's ARENA state -- the fold of the lines the world wrote since it was forked (a fork keeps none
    from before: its first day's lines give every side's facts and armies), the declarer read from the
    world. ARENA facts only, as the model was trained on."""

    def score(world: World, side: str) -> float:
        state = ArenaState()
        reached: dict[str, set[str]] = {"BLU": set(), "RED": set()}
        for text in world.log_lines:
            line = parse_line(text)
            if line is None:
                continue
            state.update(line)
            if line.kind == "army" and line["tag"] in reached:
                shown = setup_steps_shown(line, line["tag"])
                reached[line["tag"]].update(step for step, done in shown.items() if done)
        state.attacker = state.attacker or world.declarer
        return float(model.net.predict(np.asarray([state_features(state, side, reached)], np.float32))[0])

    return score
