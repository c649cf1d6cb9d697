"""The memory study: a memory cell and an action head trained on cached features, over whole games.

`train_memory(config)` reads top to bottom: the cache (training/features.py; refused when incomplete or
cached from another encoder), the held-out games, the model, the loop, the held-out report.

- Model (`StudyModel`): what the policy's memory reads, rebuilt on the cached perception: the perception
  vector (layer-normed), the previous decision's tokens, the game speed and the pointer embedded as
  `Policy._memory_inputs` embeds them, into a memory cell of `--memory` kind (models/memory_cells.py),
  whose output with the pointer's embedding is the context of the policy's own action head module
  (models/head.py, the checkpoint's head widths, trained from scratch on the cached cells). The memory's
  width comes from `hidden_for_parameters`, so every kind gets the same parameter budget; the head and
  embeddings are the same for every kind. Unlike the policy's GRU the cells get no attention read-out
  of the cell map: the study compares the recurrences alone.
- Data: `batch` lanes, each walking one training game window by window from its first decision and then
  taking the next game of a seeded order (a fresh permutation per pass). A window scores `window`
  decisions after `burn_in` decisions run without gradient; with carry (the default) a lane's memory
  goes on from where its previous window left it (its state at the start of this window's burn-in, so
  the burn-in recomputes the overlap with the current weights, as R2D2's does); --no-carry starts every
  window's burn-in from a fresh memory. Before a game's start the burn-in is shorter.
- Loss: -log p of the demonstrated tokens (the sum over the 8 slots) averaged over the window's decisions
  that may carry loss (the cache's `trainable`), AdamW with the rate cosine-decayed to 0 over `steps`.
- Held-out games: the cache's sessions split val; when it has none, or with --held-out seeded, a seeded
  share of its maps (both sides' games of one map together, as the value models hold maps out).
  They are walked as training walks them (carried through whole games, or window by window with
  --no-carry) without gradient: loss, kind accuracy and pointer distance (lattice units, 0..1023 on each
  axis), as train-bc reports them.
- Probes (training/probes.py): linear read-outs of the memory's output at each decision for the ARENA
  facts, fitted on a seeded choice of training games (`probe_decisions`) and scored on the held-out
  games, beside the trivial predictor; and the same probes of the cached perception vector alone, the
  reference a memory has to add to.
- Saves: OUT/progress.pt every `save_every` steps and when stopped (Ctrl+C), `--resume` continues it
  exactly (same threads); OUT/memory.pt (weights, config, cache hash) and OUT/report.json at the end.
  The same config and cache give the same report (a test holds it), whatever the machine's speed.

Try: hoi4-arena train-memory /tmp/features /tmp/memory-gru --memory gru --steps 200
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import read_torch_file
from hoi4_arena.models.config import ActionSpace, PointerGrid
from hoi4_arena.models.head import ActionHead, HeadScores
from hoi4_arena.models.memory_cells import (
    build_memory,
    detach_state,
    hidden_for_parameters,
    keep_state,
    parameter_count,
)
from hoi4_arena.models.policy import POINTER_DIM, PREVIOUS_DIM, SPEED_DIM, TOKEN_DIM
from hoi4_arena.models.token_embedding import LatticeEmbedding, TokenEmbedding
from hoi4_arena.training.features import CachedSession, FeatureCache, open_cache
from hoi4_arena.training.research_config import MemoryStudyConfig
from hoi4_arena.training.run_control import TrainingRun, adam

PROGRESS = "progress.pt"
MODEL = "memory.pt"
REPORT = "report.json"
CONFIG = "config.json"
FORMAT = "hoi4-arena-memory-study"
# Settings a resumed run may change: they pace the run, not what it computes.
RESUMABLE = ("save_every", "threads", "device")


class StudyModel(nn.Module):
    """Cached perception, previous tokens, speed, pointer -> memory cell -> the policy's action head."""

    def __init__(self, cache: FeatureCache, kind: str, parameters: int) -> None:
        super().__init__()
        policy = cache.layout["policy"]
        self.space = ActionSpace.default()
        self.grid = PointerGrid(self.space.lattice, int(policy["cells"]))
        self.perception_norm = nn.LayerNorm(cache.perception_dim)
        self.pointer_embedding = LatticeEmbedding(self.grid, POINTER_DIM)
        self.speed_embedding = nn.Embedding(int(policy["speeds"]), SPEED_DIM)
        self.previous_tokens = TokenEmbedding(self.space, self.grid, TOKEN_DIM)
        self.previous_slot = nn.Parameter(torch.randn(self.space.slots, TOKEN_DIM) * 0.02)
        self.previous_action = nn.Sequential(
            nn.Linear(self.space.slots * TOKEN_DIM, PREVIOUS_DIM), nn.LayerNorm(PREVIOUS_DIM), nn.GELU()
        )
        input_dim = cache.perception_dim + PREVIOUS_DIM + SPEED_DIM + POINTER_DIM
        try:
            self.hidden = hidden_for_parameters(kind, input_dim, parameters)
            self.memory = build_memory(kind, input_dim, self.hidden)
        except ValueError as error:  # a kind the cells module does not build (yet)
            raise UserError(f"--memory {kind}: {error}") from None
        self.head = ActionHead(
            self.space,
            self.grid,
            self.memory.output_dim + POINTER_DIM,
            cache.cell_dim,
            int(policy["head_dim"]),
            int(policy["position_dim"]),
        )

    def inputs(
        self, perception: torch.Tensor, previous: torch.Tensor, speed: torch.Tensor, pointer: torch.Tensor
    ):
        """(B, T, I) memory inputs, and (B, T, POINTER_DIM) pointer embeddings for the head's context."""
        previous_vec = self.previous_tokens(previous[..., 0], previous[..., 1], previous[..., 2])
        previous_vec = self.previous_action((previous_vec + self.previous_slot).flatten(-2))
        pointer_vec = self.pointer_embedding(pointer[..., 0], pointer[..., 1])
        x = torch.cat(
            [self.perception_norm(perception), previous_vec, self.speed_embedding(speed - 1), pointer_vec], -1
        )
        return x, pointer_vec


# --- the data: lanes walking games ---


@dataclass
class Chunk:
    """What a step reads for B lanes: `burn_in + window` decisions from each lane's burn-in start."""

    perception: torch.Tensor  # (B, L, P) float32
    previous: torch.Tensor  # (B, L, 8, 3) long: the decision before each one's tokens (no-ops at 0)
    speed: torch.Tensor  # (B, L) long
    pointer: torch.Tensor  # (B, L, 2) long
    real: torch.Tensor  # (B, L) bool: a decision of the game (not padding before or after it)
    cells: torch.Tensor  # (B, W, C, D) float32, the scored part only
    tokens: torch.Tensor  # (B, W, 8, 3) long
    mask: torch.Tensor  # (B, W) float: real and trainable


def gather(
    sessions: list[CachedSession],
    lanes: list[tuple[int, int]],
    burn_in: int,
    window: int,
    device: torch.device,
) -> Chunk:
    """The chunk of each lane (session index, position of its first scored decision)."""
    b, length = len(lanes), burn_in + window
    first = sessions[0].arrays
    perception = np.zeros((b, length, first["perception"].shape[1]), np.float32)
    previous = np.zeros((b, length, *first["tokens"].shape[1:]), np.int64)
    speed = np.ones((b, length), np.int64)
    pointer = np.zeros((b, length, 2), np.int64)
    real = np.zeros((b, length), bool)
    cells = np.zeros((b, window, *first["cells"].shape[1:]), np.float32)
    tokens = np.zeros((b, window, *first["tokens"].shape[1:]), np.int64)
    trainable = np.zeros((b, window), bool)
    for row, (s, p) in enumerate(lanes):
        a, n = sessions[s].arrays, sessions[s].decisions
        start = p - burn_in
        lo, hi = max(0, start), min(n, p + window)
        if hi <= lo:
            continue
        at = slice(lo - start, hi - start)
        perception[row, at] = a["perception"][lo:hi]
        speed[row, at] = a["speed"][lo:hi]
        pointer[row, at] = a["pointer"][lo:hi]
        real[row, at] = True
        before = a["tokens"][max(lo - 1, 0) : hi - 1]
        previous[row, lo - start + (lo == 0) : hi - start] = before
        scored_lo = max(lo, p)
        if hi > scored_lo:
            here = slice(scored_lo - p, hi - p)
            cells[row, here] = a["cells"][scored_lo:hi]
            tokens[row, here] = a["tokens"][scored_lo:hi]
            trainable[row, here] = a["trainable"][scored_lo:hi]
    t = lambda v: torch.from_numpy(v).to(device)  # noqa: E731
    return Chunk(
        t(perception),
        t(previous),
        t(speed),
        t(pointer),
        t(real),
        t(cells),
        t(tokens),
        t(trainable & real[:, burn_in:]).float(),
    )


def _advance(model: StudyModel, x: torch.Tensor, real: torch.Tensor, state: tuple, save: int | None):
    """Run x (B, T, I) from `state`; returns outputs (B, T, O), the end state, and the state after `save`
    steps (None when not asked). Rows not yet `real` are held at the initial state, so a burn-in cut
    short by the game's start begins from a fresh memory at the game's first decision."""
    cell = model.memory
    saved = state if save == 0 else None
    if bool(real.all()):
        pieces = [(0, save), (save, x.shape[1])] if save else [(0, x.shape[1])]
        ys = []
        for lo, hi in pieces:
            if hi > lo:
                y, state = cell.run(x[:, lo:hi], state)
                ys.append(y)
            if hi == save:
                saved = state
        return torch.cat(ys, dim=1), state, saved
    ys = []
    for t in range(x.shape[1]):
        y, state = cell.step(x[:, t], state)
        state = keep_state(state, real[:, t])
        ys.append(y)
        if save == t + 1:
            saved = state
    return torch.stack(ys, dim=1), state, saved


def forward(
    model: StudyModel, chunk: Chunk, state: tuple, burn_in: int, window: int
) -> tuple[HeadScores, torch.Tensor, tuple]:
    """Scores of the chunk's `window` scored decisions (B * W rows), the memory's outputs there
    (B, W, O), and the detached state `window` decisions after the chunk's start (the next chunk's)."""
    n = burn_in
    with torch.no_grad():
        x, _ = model.inputs(
            chunk.perception[:, :n], chunk.previous[:, :n], chunk.speed[:, :n], chunk.pointer[:, :n]
        )
        save_early = window if window < n else None
        if n:
            _, state, saved = _advance(model, x, chunk.real[:, :n], state, save_early)
        else:
            saved = None
    state = detach_state(state)
    x, pointer_vec = model.inputs(
        chunk.perception[:, n:], chunk.previous[:, n:], chunk.speed[:, n:], chunk.pointer[:, n:]
    )
    # The scored part never starts with padding (a lane's position lies inside its game), so it needs no
    # resets: padding after the game's end changes nothing before it.
    y, _, saved_late = _advance(
        model, x, torch.ones_like(chunk.real[:, n:]), state, window - n if save_early is None else None
    )
    saved = saved if save_early is not None else saved_late
    context = torch.cat([y, pointer_vec], dim=-1)
    scores = model.head.score(context.flatten(0, 1), chunk.cells.flatten(0, 1), chunk.tokens.flatten(0, 1))
    return scores, y, detach_state(saved)


def nll(scores: HeadScores) -> torch.Tensor:
    """(N,) -log p of each whole demonstrated action."""
    return -(scores.kind_logp + scores.cell_logp + scores.position_logp).sum(dim=-1)


class Tally:
    """Held-out loss, kind accuracy (per slot) and pointer distance of move slots, as train-bc reports."""

    def __init__(self) -> None:
        self.loss, self.decisions, self.kind_correct, self.slots = 0.0, 0, 0, 0
        self.distances: list[np.ndarray] = []

    def add(self, scores: HeadScores, tokens: torch.Tensor, mask: torch.Tensor) -> None:
        counted = mask.flatten().bool()
        tokens = tokens.flatten(0, 1)[counted]
        self.loss += float(nll(scores)[counted].sum())
        self.decisions += int(counted.sum())
        self.kind_correct += int((scores.kind_pred[counted] == tokens[..., 0]).sum())
        self.slots += int(counted.sum()) * tokens.shape[1]
        moves = scores.move[counted]
        delta = (scores.pointer_pred[counted][moves] - tokens[..., 1:][moves]).double()
        self.distances.append(delta.norm(dim=-1).numpy())

    def summary(self) -> dict[str, Any]:
        d = np.concatenate(self.distances) if self.distances else np.zeros(0)
        mean = lambda total, count: total / count if count else None  # noqa: E731
        return {
            "loss": mean(self.loss, self.decisions),
            "decisions": self.decisions,
            "kind_accuracy": mean(self.kind_correct, self.slots),
            "moves": len(d),
            "pointer_distance_median": float(np.median(d)) if len(d) else None,
            "pointer_distance_mean": float(d.mean()) if len(d) else None,
            "pointer_within_8": float((d <= 8).mean()) if len(d) else None,
        }


@torch.no_grad()
def walk(
    model: StudyModel, sessions: list[CachedSession], config: MemoryStudyConfig, device: torch.device
) -> tuple[Tally, list[np.ndarray]]:
    """Walk whole games as training does (carried, or window by window with --no-carry), without
    gradient: the tally of every trainable decision, and per session the memory's output at each decision."""
    was_training = model.training
    model.eval()
    tally = Tally()
    outputs = []
    w, n = config.window, config.burn_in
    for first in range(0, len(sessions), config.batch):
        group = sessions[first : first + config.batch]
        state = model.memory.initial(len(group), device)
        rows: list[list[np.ndarray]] = [[] for _ in group]
        for p in range(0, max(s.decisions for s in group), w):
            chunk = gather(group, [(i, p) for i in range(len(group))], n, w, device)
            start = state if config.carry else model.memory.initial(len(group), device)
            scores, y, state = forward(model, chunk, start, n, w)
            tally.add(scores, chunk.tokens, chunk.mask)
            for i, s in enumerate(group):
                rows[i].append(y[i, : max(0, min(w, s.decisions - p))].float().cpu().numpy())
        outputs += [np.concatenate(r) for r in rows]
    model.train(was_training)
    return tally, outputs


# --- held-out games, probes ---


def split_sessions(cache: FeatureCache, config: MemoryStudyConfig) -> tuple[list[int], list[int], str]:
    """Indices of the training and held-out sessions, and how the held-out ones were chosen: the cache's
    val split, or a seeded share of its maps (whole maps: both sides' games of one map go together)."""
    val = [i for i, s in enumerate(cache.sessions) if s.split == "val"]
    if val and config.held_out == "split":
        return [i for i, s in enumerate(cache.sessions) if s.split != "val"], val, "split"
    groups = sorted({s.group for s in cache.sessions})
    if len(groups) < 2:
        raise UserError(f"{cache.path} holds games of {len(groups)} map: nothing to hold out; cache more")
    order = np.random.default_rng(config.seed).permutation(len(groups))
    count = min(max(round(config.val_share * len(groups)), 1), len(groups) - 1)
    held = {groups[i] for i in order[:count]}
    val = [i for i, s in enumerate(cache.sessions) if s.group in held]
    return [i for i, s in enumerate(cache.sessions) if s.group not in held], val, f"seeded maps ({count})"


def _facts(
    cache: FeatureCache, sessions: list[CachedSession]
) -> tuple[list[CachedSession], dict[str, np.ndarray]]:
    """The sessions whose ARENA facts are known, and their facts stacked (classes as ints)."""
    kinds = cache.layout["facts"]
    known = [s for s in sessions if not np.isnan(s.arrays["facts"]).any()]
    facts: dict[str, np.ndarray] = {}
    for j, (name, kind) in enumerate(kinds.items()):
        column = (
            np.concatenate([np.asarray(s.arrays["facts"][:, j]) for s in known]) if known else np.zeros(0)
        )
        facts[name] = column.astype(np.float64) if kind == "regression" else column.astype(np.int64)
    return known, facts


def probes(
    cache: FeatureCache,
    train: list[CachedSession],
    train_outputs: list[np.ndarray],
    val: list[CachedSession],
    val_outputs: list[np.ndarray],
) -> dict[str, Any]:
    """Linear probes of the memory's outputs and of the perception alone (training/probes.py)."""
    from hoi4_arena.training.probes import probe

    by_id = {s.id: o for s, o in zip(train + val, train_outputs + val_outputs, strict=True)}
    train_known, train_facts = _facts(cache, train)
    val_known, val_facts = _facts(cache, val)
    if not train_known or not val_known:
        return {"skipped": "the ARENA facts are not known for the training or the held-out sessions"}
    stack = lambda ss: np.concatenate([by_id[s.id] for s in ss])  # noqa: E731
    perception = lambda ss: np.concatenate([np.asarray(s.arrays["perception"]) for s in ss])  # noqa: E731
    return {
        "memory": probe(stack(train_known), train_facts, stack(val_known), val_facts),
        "perception": probe(perception(train_known), train_facts, perception(val_known), val_facts),
    }


def probe_sessions(train: list[int], cache: FeatureCache, config: MemoryStudyConfig) -> list[int]:
    """A seeded choice of training sessions holding at least `probe_decisions` decisions (or all)."""
    order = np.random.default_rng([config.seed, 1]).permutation(train).tolist()
    chosen, total = [], 0
    for i in order:
        if total >= config.probe_decisions:
            break
        chosen.append(i)
        total += cache.sessions[i].decisions
    return sorted(chosen)


# --- the run ---


def decayed_lr(lr: float, fraction: float) -> float:
    return lr * 0.5 * (1 + math.cos(math.pi * min(max(fraction, 0.0), 1.0)))


def game_order(train: list[int], seed: int, game: int) -> int:
    """The `game`-th game of the seeded order (a fresh permutation of the training sessions per pass)."""
    cycle, at = divmod(game, len(train))
    return train[int(np.random.default_rng([seed, 2, cycle]).permutation(len(train))[at])]


def _progress_file(path: Path) -> dict[str, Any]:
    saved = read_torch_file(path, "train-memory progress file")
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise UserError(f"{path} is not a train-memory progress file")
    return saved


def train_memory(
    config: MemoryStudyConfig,
    *,
    resume: bool = False,
    changes: dict[str, Any] | None = None,
    stop_after: int | None = None,
) -> dict[str, Any]:
    """Train (or resume) a memory study run; returns the report (also in OUT/report.json).

    With `resume` the run goes on with its stored settings; `changes` are the settings the user gave (the
    command line's typed options; None: every field of `config`), and any that would change what the run
    computes are refused. `stop_after` stops cleanly after that many steps in all, as Ctrl+C does (tests)."""
    out = Path(config.out)
    run = TrainingRun(out, "train-memory", (PROGRESS, MODEL, REPORT, CONFIG), _progress_file, resume=resume)
    saved = run.saved
    if saved is not None:
        stored = saved["config"]
        given = config.to_dict() if changes is None else changes
        kept = (*RESUMABLE, "features", "out")
        changed = sorted(k for k, v in given.items() if k not in kept and stored[k] != v)
        if changed:
            raise UserError(
                f"--resume continues the stored run; these settings differ from it: {', '.join(changed)}"
            )
        config = MemoryStudyConfig.from_dict({**stored, **{k: getattr(config, k) for k in kept}})
    device = run.use(config.threads, config.device)

    # --- the cache and the held-out games ---
    cache = open_cache(config.features, config.checkpoint)
    if saved is not None and saved["encoder_sha256"] != cache.encoder_sha256:
        raise UserError(f"the cache {config.features} is not the one this run started on (another encoder)")
    train, val, held_out_by = split_sessions(cache, config)
    if not train:
        raise UserError(f"{cache.path}: every session is held out; cache training sessions too")
    sessions = cache.sessions

    # --- model and optimizer ---
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = StudyModel(cache, config.memory, config.parameters).to(device)
    optimizer = adam(model.parameters(), config.lr, config.weight_decay)
    b, w, n = config.batch, config.window, config.burn_in
    progress: dict[str, Any] = {
        "step": 0,
        "next_game": b,
        "lanes": [[game_order(train, config.seed, i), 0] for i in range(b)],
    }
    carried = model.memory.initial(b, device)
    losses: list[float] = []
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        progress = saved["progress"]
        carried = tuple(s.to(device) for s in saved["carried"])
        losses = list(saved["losses"])

    def save_progress(path: Path, full: bool) -> None:
        content = {
            "format": FORMAT,
            "config": config.to_dict(),
            "encoder_sha256": cache.encoder_sha256,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "progress": progress,
            "carried": [s.detach().cpu() for s in carried],
            "losses": losses,
        }
        temporary = path.with_name(path.name + ".partial")
        torch.save(content, temporary)
        temporary.replace(path)

    run.start(config.to_dict(), write=save_progress, tensorboard=False)

    # --- the loop ---
    model.train()
    with run.loop() as bar:
        task = bar.add_task(f"train-memory {config.memory}", total=config.steps, completed=progress["step"])
        while progress["step"] < config.steps and not run.stop:
            lanes = [tuple(lane) for lane in progress["lanes"]]
            chunk = gather(sessions, lanes, n, w, device)
            start = carried if config.carry else model.memory.initial(b, device)
            scores, _, carried = forward(model, chunk, start, n, w)
            counted = chunk.mask.sum()
            loss = (nll(scores) * chunk.mask.flatten()).sum() / counted.clamp(min=1)
            for group in optimizer.param_groups:
                group["lr"] = decayed_lr(config.lr, progress["step"] / config.steps)
            optimizer.zero_grad(set_to_none=True)
            if counted > 0:
                loss.backward()
                if config.grad_clip:
                    nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
                optimizer.step()
            # Each lane moves on by a window; a lane past its game's end takes the next game, fresh.
            keep = []
            for lane in progress["lanes"]:
                lane[1] += w
                done = lane[1] >= sessions[lane[0]].decisions
                if done:
                    lane[0], lane[1] = game_order(train, config.seed, progress["next_game"]), 0
                    progress["next_game"] += 1
                keep.append(not done)
            carried = keep_state(carried, torch.tensor(keep, device=device))
            progress["step"] += 1
            losses.append(loss.item())
            bar.update(task, advance=1, description=f"train-memory {config.memory} loss {losses[-1]:.3f}")
            if stop_after is not None and progress["step"] >= stop_after:
                run.stop_with("stop_after")
            if progress["step"] % config.save_every == 0 or run.stop:
                run.save_progress()
        if run.stop:
            return {"stopped": run.stop, "steps": progress["step"], "progress": str(out / PROGRESS)}

        # --- held-out report and probes ---
        bar.update(task, description=f"train-memory {config.memory}: held-out games and probes")
        held, val_outputs = walk(model, [sessions[i] for i in val], config, device)
        probed = probe_sessions(train, cache, config)
        _, train_outputs = walk(model, [sessions[i] for i in probed], config, device)
        probe_results = probes(
            cache, [sessions[i] for i in probed], train_outputs, [sessions[i] for i in val], val_outputs
        )

    torch.save(
        {
            "format": FORMAT,
            "config": config.to_dict(),
            "encoder_sha256": cache.encoder_sha256,
            "model": model.state_dict(),
        },
        out / MODEL,
    )
    run.save_progress()
    tail = losses[-min(len(losses), 20) :]
    report = {
        "memory": config.memory,
        "carry": config.carry,
        "window": w,
        "burn_in": n,
        "steps": progress["step"],
        "seed": config.seed,
        "hidden": model.hidden,
        "parameters": {
            "memory": parameter_count(model.memory),
            "budget": config.parameters,
            "head": parameter_count(model.head),
            "total": parameter_count(model),
        },
        "train_loss_last_20": float(np.mean(tail)) if tail else None,
        "held_out": {
            **held.summary(),
            "sessions": len(val),
            "held_out_by": held_out_by,
            "walked": "whole games, the memory carried"
            if config.carry
            else f"windows of {w} from a fresh memory after {n} decisions of burn-in",
        },
        "probes": probe_results,
        "probe_sessions": len(probed),
        "sessions": {"train": len(train), "val": len(val)},
        "features": str(cache.path),
        "encoder_sha256": cache.encoder_sha256,
        "model": str(out / MODEL),
        "seconds": run.seconds,
        "threads": torch.get_num_threads(),
    }
    return run.finish(report, report=REPORT)
