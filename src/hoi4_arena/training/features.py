"""Cached features: a trained policy's frozen perception of every decision of a data folder, on disk.

`cache_features(config)` runs the checkpoint's perception (`Policy.see`: encoder, detail reader and cell
map) once over every decision of every usable session (data/sources.py picks them as train-bc does,
data/decode.py reads their views and tokens), and writes, per session, one folder of .npy shards
(numpy memmaps, one row per decision):

    perception  float32 (N, P)     what the memory reads of the screen: summary, cell mean [and max],
                                   fovea vector (`Policy._memory_inputs` without the action, speed and
                                   pointer, which the tokens below give)
    cells       float16 (N, C, D)  the cell map the head's pointer scores read (--cells-dtype float32)
    tokens      int16 (N, 8, 3)    the demonstrated tokens (kind, x, y on the lattice)
    pointer     int16 (N, 2)       the pointer's lattice position when the decision began
    speed       int8 (N,)          the game speed 1..5
    trainable   bool (N,)          whether the decision may carry loss (not a burst, with focus, ...)
    facts       float64 (N, F)     the ARENA facts of each decision (training/probes.py's `FACTS`: day,
                                   army, front, offensive, own side, provinces), NaN where unknown

and OUT/layout.json: the format and version, the shapes and dtypes, the sessions (id, split, decisions,
map group, path), the checkpoint's path, its perception hash (`perception_sha256`: the sha256 of the encoder's,
detail reader's and cell map's weights) and its policy config.

A killed run never leaves a cache that reads as whole: layout.json says `complete: false` until the last
session is written, and each session's folder gets its `done.json` only after its shards are flushed
and renamed into place. Running the same command again resumes (sessions already done are kept); a
different checkpoint or data set in the same OUT is refused. `open_cache` refuses an incomplete cache,
one of another format version, shards of the wrong shape, and (given a checkpoint) another encoder.

Try: hoi4-arena cache-features runs/demo-b/demos runs/demo-b/bc/last.pt /tmp/features
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hoi4_arena.data.decode import DecodeSettings, decode_session
from hoi4_arena.data.sources import SessionSource, find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState
from hoi4_arena.models.checkpoint import load_checkpoint, weights_sha256
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Observation, Policy
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.terminal import progress_bar
from hoi4_arena.training.probes import FACTS, facts_for_session
from hoi4_arena.training.research_config import LAYOUT, FeaturesConfig, features_layout, is_encoder_name
from hoi4_arena.training.run_control import device_of

log = logging.getLogger(__name__)

FORMAT = "hoi4-arena-features"
FORMAT_VERSION = 1
SESSIONS = "sessions"
DONE = "done.json"
PERCEPTION_MODULES = ("encoder", "detail", "cell_map")
"""The policy's modules `Policy.see` runs: their weights are the cache's encoder hash."""


def perception_sha256(policy: Policy) -> str:
    """The sha256 of the weights `Policy.see` uses (encoder, detail reader, cell map), in name order."""
    state = policy.state_dict()
    return weights_sha256({k: v for k, v in state.items() if k.split(".", 1)[0] in PERCEPTION_MODULES})


def perception_parts(policy: Policy) -> dict[str, int]:
    """The perception vector's parts in order, with their widths."""
    config = policy.config
    parts = {"summary": config.summary_dim, "cell_mean": config.cell_dim}
    if config.cell_pool == "mean_max":
        parts["cell_max"] = config.cell_dim
    parts["fovea"] = config.fovea_dim
    return parts


def array_specs(policy: Policy, cells_dtype: str) -> dict[str, dict[str, Any]]:
    """Per-decision shape and dtype of each stored array."""
    space = policy.space
    return {
        "perception": {"shape": [sum(perception_parts(policy).values())], "dtype": "float32"},
        "cells": {"shape": [policy.grid.count, policy.config.cell_dim], "dtype": cells_dtype},
        "tokens": {"shape": [space.slots, 3], "dtype": "int16"},
        "pointer": {"shape": [2], "dtype": "int16"},
        "speed": {"shape": [], "dtype": "int8"},
        "trainable": {"shape": [], "dtype": "bool"},
        "facts": {"shape": [len(FACTS)], "dtype": "float64"},
    }


@torch.no_grad()
def perceive(policy: Policy, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, P) perception vectors and (N, C, D) cells of N decisions, as `Policy._memory_inputs` pools them."""
    seen = policy.see(obs)
    pooled = [seen.cells.mean(dim=-2)]
    if policy.config.cell_pool == "mean_max":
        pooled.append(seen.cells.amax(dim=-2))
    return torch.cat([seen.summary, *pooled, seen.fovea], dim=-1), seen.cells


# --- ARENA facts ---


def session_facts(path: str | Path, decisions: int) -> np.ndarray:
    """(decisions, len(FACTS)) float64: training/probes.py's facts of each decision in `FACTS` order
    (classes as whole numbers), NaN throughout when the session's ARENA log or side cannot tell them."""
    try:
        facts = facts_for_session(path)
    except UserError as error:
        log.warning("session %s: no ARENA facts for the probes: %s", path, error)
        return np.full((decisions, len(FACTS)), np.nan)
    columns = [np.asarray(facts[name], np.float64) for name in FACTS]
    if any(len(c) != decisions for c in columns):
        raise UserError(f"{path}: its ARENA facts cover {len(columns[0])} decisions, the session {decisions}")
    return np.stack(columns, axis=1).reshape(decisions, len(FACTS))


# --- writing ---


def _sessions(config: FeaturesConfig, layout: str) -> list[SessionSource]:
    data = find_sessions(config.data, config.sources, layout)
    train = sorted(data.train, key=lambda s: s.id)
    if config.max_sessions:
        train = train[: config.max_sessions]
    return train + sorted(data.val, key=lambda s: s.id)


def map_group(path: str | Path, session_id: str) -> str:
    """The map a session was played on ("arena:seed" of its ARENA start line; its id without one): the two
    sessions record-ai plays on one map, one from each side, share it, so held-out games are chosen by it."""
    logs = SessionReader(path).log_records
    first = ArenaState.from_lines([r.line for r in logs[:8]]) if logs else ArenaState()
    return f"{first.arena}:{first.seed}" if first.arena is not None else session_id


def _describe(sessions: list[SessionSource]) -> list[dict[str, Any]]:
    return [
        {
            "id": s.id,
            "split": s.split,
            "decisions": s.decisions,
            "group": map_group(s.path, s.id),
            "path": s.path,
        }
        for s in sessions
    ]


def _write_json(path: Path, content: Any) -> None:
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(content, indent=2) + "\n")
    os.replace(temporary, path)


def _read_layout(out: Path) -> dict[str, Any]:
    path = out / LAYOUT
    try:
        layout = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: cannot read the cache's layout ({error})") from None
    if not isinstance(layout, dict) or layout.get("format") != FORMAT:
        raise UserError(f"{path} is not a hoi4-arena features cache (no format {FORMAT!r})")
    if layout.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"{path} has format version {layout.get('format_version')!r}; this code reads version "
            f"{FORMAT_VERSION}: run cache-features again into a new folder"
        )
    return layout


def _session_done(folder: Path, session: dict[str, Any]) -> bool:
    done = folder / DONE
    if not done.is_file():
        return False
    try:
        return json.loads(done.read_text()).get("decisions") == session["decisions"]
    except ValueError:
        return False


def _write_session(
    policy: Policy,
    source: SessionSource,
    folder: Path,
    specs: dict[str, dict[str, Any]],
    config: FeaturesConfig,
    device: torch.device,
    on_decisions: Any,
) -> None:
    """The session's shards, written under a temporary name and renamed; done.json last."""
    n = source.decisions
    temporary = folder.with_name(folder.name + ".partial")
    if temporary.exists():
        shutil.rmtree(temporary)  # what a killed run left half-written
    temporary.mkdir(parents=True)
    arrays = {
        name: np.lib.format.open_memmap(
            temporary / f"{name}.npy", mode="w+", dtype=spec["dtype"], shape=(n, *spec["shape"])
        )
        for name, spec in specs.items()
    }
    arrays["facts"][:] = session_facts(source.path, n)
    clip = policy.sizes.clip if policy.config.reads_clip else 0
    recent: list[np.ndarray] = []  # the last `clip` global views (the first repeated before the start)
    pending: list[tuple[int, Any, np.ndarray | None]] = []
    count = 0

    def flush() -> None:
        if not pending:
            return
        index = [i for i, _, _ in pending]
        views = [v for _, v, _ in pending]
        global_view = np.stack([c if c is not None else v["global"] for (_, v, c) in pending])
        obs = Observation(
            torch.from_numpy(global_view),
            torch.from_numpy(np.stack([v["quadrants"] for v in views])),
            torch.from_numpy(np.stack([v["fovea"] for v in views])),
            torch.from_numpy(np.asarray(arrays["speed"][index], np.int64)),
            torch.from_numpy(np.asarray(arrays["pointer"][index], np.int64)),
        ).to(device)
        perception, cells = perceive(policy, obs)
        arrays["perception"][index[0] : index[-1] + 1] = perception.cpu().numpy()
        arrays["cells"][index[0] : index[-1] + 1] = cells.cpu().numpy().astype(config.cells_dtype)
        on_decisions(len(pending))
        pending.clear()

    for sample in decode_session(source.path, DecodeSettings(policy.config.layout)):
        i = sample.index
        if i >= n:
            raise UserError(f"{source.path}: holds more decisions than its frame log promised ({n})")
        arrays["tokens"][i] = sample.tokens
        arrays["pointer"][i] = sample.pointer
        arrays["speed"][i] = sample.speed
        arrays["trainable"][i] = sample.trainable
        stack = None
        if clip:
            recent = (recent or [sample.views["global"]] * clip)[1:] + [sample.views["global"]]
            stack = np.stack(recent)
        pending.append((i, sample.views, stack))
        count += 1
        if len(pending) == config.batch:
            flush()
    flush()
    if count != n:
        raise UserError(f"{source.path}: gave {count} decisions where its frame log promised {n}")
    for array in arrays.values():
        array.flush()
    arrays.clear()  # closes the memmaps before the rename
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(temporary, folder)
    _write_json(folder / DONE, {"id": source.id, "decisions": n})


def cache_features(config: FeaturesConfig) -> dict[str, Any]:
    """Write (or finish) the cache of `config.checkpoint`'s perception for `config.data`; the summary."""
    started = time.monotonic()
    if config.threads:
        torch.set_num_threads(config.threads)
    device = device_of(config.device)
    policy, view_layout = load_perception(config.checkpoint, config.policy, device)
    sha = perception_sha256(policy)
    sessions = _sessions(config, policy.config.layout)
    specs = array_specs(policy, config.cells_dtype)
    out = Path(config.out)
    layout = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "complete": False,
        "checkpoint": config.checkpoint
        if is_encoder_name(config.checkpoint)
        else str(Path(config.checkpoint).resolve()),
        "encoder_sha256": sha,
        "policy": policy.config.to_dict(),
        "layout": view_layout,
        "perception": perception_parts(policy),
        "arrays": specs,
        "facts": dict(FACTS),
        "data": str(config.data),
        "sources": list(config.sources),
        "max_sessions": config.max_sessions,
        "sessions": _describe(sessions),
    }
    resumed = 0
    if out.exists() and any(out.iterdir()):
        if not (out / LAYOUT).is_file():
            raise UserError(f"{out} exists and holds no features cache (no {LAYOUT}); choose another folder")
        stored = _read_layout(out)
        differ = [
            key
            for key in ("encoder_sha256", "policy", "arrays", "sessions", "facts")
            if stored.get(key) != layout[key]
        ]
        if differ:
            what = {"encoder_sha256": "encoder", "sessions": "data (sessions or their lengths)"}
            named = ", ".join(what.get(k, k) for k in differ)
            raise UserError(
                f"{out} holds a features cache of another {named}; choose another folder, or delete it"
            )
        resumed = sum(_session_done(out / SESSIONS / s["id"], s) for s in layout["sessions"])
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / LAYOUT, layout)

    total = sum(s.decisions for s in sessions)
    written = 0
    with progress_bar() as bar:
        task = bar.add_task("caching features", total=total)
        for source, described in zip(sessions, layout["sessions"], strict=True):
            folder = out / SESSIONS / source.id
            if _session_done(folder, described):
                bar.update(task, advance=source.decisions)
                continue
            bar.update(task, description=f"caching {source.id}")
            _write_session(
                policy,
                source,
                folder,
                specs,
                config,
                device,
                lambda k: bar.update(task, advance=k),
            )
            written += 1
    layout["complete"] = True
    _write_json(out / LAYOUT, layout)
    size = sum(p.stat().st_size for p in (out / SESSIONS).rglob("*.npy"))
    return {
        "out": str(out),
        "layout": str(out / LAYOUT),
        "sessions": len(sessions),
        "sessions_written": written,
        "sessions_resumed": resumed,
        "decisions": total,
        "train": sum(s.split == "train" for s in sessions),
        "val": sum(s.split == "val" for s in sessions),
        "encoder_sha256": sha,
        "bytes": size,
        "seconds": time.monotonic() - started,
    }


# --- reading ---


@dataclass
class CachedSession:
    """One session's shards (read-only memmaps)."""

    id: str
    split: str
    decisions: int
    group: str
    """The map it was played on (`map_group`)."""
    arrays: dict[str, np.ndarray]


@dataclass
class FeatureCache:
    """An opened, complete cache."""

    path: Path
    layout: dict[str, Any]
    sessions: list[CachedSession]

    @property
    def encoder_sha256(self) -> str:
        return self.layout["encoder_sha256"]

    @property
    def perception_dim(self) -> int:
        return int(self.layout["arrays"]["perception"]["shape"][0])

    @property
    def cell_dim(self) -> int:
        return int(self.layout["arrays"]["cells"]["shape"][1])


def load_perception(
    spec: str, widths: dict[str, Any], device: torch.device | str = "cpu"
) -> tuple[Policy, dict[str, str]]:
    """The policy whose perception is cached, and its view layout ({name, version}): a checkpoint's, or
    for an encoder name (cnn, timm:NAME) a fresh policy of that encoder and `widths`, seeded by their
    `seed` (so the same name and widths build the same weights: the cache's check rebuilds it)."""
    if not is_encoder_name(spec):
        checkpoint = load_checkpoint(spec, device=device)
        return checkpoint.policy.eval(), checkpoint.layout
    try:
        config = PolicyConfig.from_dict({**widths, "encoder": spec})
    except (TypeError, ValueError) as error:
        raise UserError(f"--policy: {error}") from None
    policy = Policy(config).to(device).eval()
    return policy, {"name": config.layout, "version": policy.sizes.layout_version}


def check_encoder(layout: dict[str, Any], checkpoint: str | Path | None, where: Path) -> None:
    """Refuse a cache whose encoder is not `checkpoint`'s (default: the checkpoint the cache names, when
    that file is still there; a warning says when it is not). A cache of an encoder alone (cnn,
    timm:NAME) is checked against that encoder rebuilt from the cache's stored policy settings."""
    given = checkpoint is not None
    if is_encoder_name(str(checkpoint if given else layout["checkpoint"])):
        name = str(checkpoint if given else layout["checkpoint"])
        policy, _ = load_perception(name, {**layout["policy"], "encoder": name})
        _compare(perception_sha256(policy), layout, where, name)
        return
    path = Path(checkpoint) if given else Path(layout["checkpoint"])
    if not path.is_file():
        if given:
            raise UserError(f"checkpoint {path} does not exist")
        log.warning("the checkpoint %s the cache was made from is gone: its encoder is not checked", path)
        return
    _compare(perception_sha256(load_checkpoint(path).policy), layout, where, str(path))


def _compare(sha: str, layout: dict[str, Any], where: Path, source: str) -> None:
    if sha != layout["encoder_sha256"]:
        raise UserError(
            f"the features in {where} were cached from another encoder than {source}'s (its perception "
            f"weights changed: sha256 {sha[:12]}, the cache's {layout['encoder_sha256'][:12]}); run "
            "cache-features again with this checkpoint"
        )


def open_cache(path: str | Path, checkpoint: str | Path | None = None, *, check: bool = True) -> FeatureCache:
    """Open a complete cache, its shards as read-only memmaps; UserError for an incomplete or damaged one,
    or (with `check`) one whose encoder is not `checkpoint`'s (see `check_encoder`)."""
    path = Path(path)
    features_layout(path)
    layout = _read_layout(path)
    done = [s for s in layout["sessions"] if _session_done(path / SESSIONS / s["id"], s)]
    if not layout.get("complete") or len(done) != len(layout["sessions"]):
        raise UserError(
            f"the features cache {path} is incomplete ({len(done)} of {len(layout['sessions'])} sessions "
            "written: the run was stopped); run the same cache-features command again to finish it"
        )
    if check:
        check_encoder(layout, checkpoint, path)
    sessions = []
    for s in layout["sessions"]:
        folder = path / SESSIONS / s["id"]
        arrays = {}
        for name, spec in layout["arrays"].items():
            file = folder / f"{name}.npy"
            try:
                array = np.load(file, mmap_mode="r")
            except (OSError, ValueError) as error:
                raise UserError(f"{file}: cannot read this shard ({error}); make the cache again") from None
            expected = (s["decisions"], *spec["shape"])
            if array.shape != expected or array.dtype != np.dtype(spec["dtype"]):
                raise UserError(
                    f"{file}: {array.dtype} {array.shape}, the layout says {spec['dtype']} {expected}; "
                    "make the cache again"
                )
            arrays[name] = array
        sessions.append(CachedSession(s["id"], s["split"], s["decisions"], s["group"], arrays))
    return FeatureCache(path, layout, sessions)
