"""Distillation: a small CNN encoder (the student) trained to reproduce a larger encoder's features (the
teacher) on the frames of recorded sessions, so that a policy can read the screen at the CNN's cost.

    hoi4-arena distill TEACHER STUDENT_CONFIG DATA OUT

- The teacher is frozen. A timm tower (`timm:NAME` untrained, or NAME's `.safetensors` weights, with
  `--tower-args` for a narrower tower of the family) gives its own features, before any policy
  projection: the mean of its last block's patch tokens (the summary) and the patch tokens themselves
  (the map). A policy checkpoint gives its encoder's outputs: the summary the policy reads and, for a
  cnn encoder, its last conv stage (for a timm encoder, its cell-map projection).
- The student is the project's `CnnEncoder` (`models/encoders.py`) of STUDENT_CONFIG's PolicyConfig,
  reading the current global view of the same frame; the teacher reads its own view (a tower the four
  quadrants, a policy checkpoint whatever its encoder reads). A linear head maps the student's summary
  onto the teacher's, a 1x1 convolution its last conv map onto the teacher's map; both maps are pooled
  to a `MAP_GRID` grid first. The heads are for training only.
- Loss: the MSE of the teacher's features standardised per channel with the training frames' mean and
  spread (1.0: no better than predicting the mean) plus `cosine_weight` * (1 - cosine) between the
  prediction and the standardised target, for the summary and (times `map_weight`) the map.
- Teacher features are computed once per frame and held in memory with the student's input views; the
  run is `--steps` AdamW steps of `--batch` frames in a seeded order (an epoch's permutation after
  another), so the same seed gives the same student, bit for bit, on the same machine and threads.
- Held out: the data's `val` sessions, else a seeded share of the maps (both sides of a game stay on
  one side of the split). The report (OUT/report.json and stdout) gives the train and held-out feature
  MSE and cosine before and after training.
- OUT/student.pt is a policy checkpoint of STUDENT_CONFIG's architecture whose encoder is the student
  (every other module at its seeded initialisation, the heads in `extra["distill"]`): `train-bc --init
  OUT/student.pt` with the same layout and `--policy` widths starts a policy from the distilled encoder,
  and `scripts/probe_encoders.py` probes it like any checkpoint.

`load_encoder` and `session_views` also serve `scripts/probe_encoders.py`: any encoder as a frozen
feature extractor, and a session's decisions as the views it reads.

Try: hoi4-arena distill timm:qwen3_vit_88m_enc width=8,summary_dim=64 runs/demo-b/demos /tmp/distill \
       --tower-args embed_dim=64,depth=2,num_heads=2 --steps 100 --every 4 --max-sessions 8
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hoi4_arena.data.decode import DecodeSettings, decode_session
from hoi4_arena.data.sources import SessionSource, find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState
from hoi4_arena.models.checkpoint import Provenance, load_checkpoint, save_checkpoint, weights_sha256
from hoi4_arena.models.config import TIMM_TOWERS, PolicyConfig
from hoi4_arena.models.encoders import SUMMARY_POOL, CnnEncoder, TimmTowerEncoder
from hoi4_arena.models.policy import Policy
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.terminal import progress_bar
from hoi4_arena.training.distill_config import TIMM_PREFIX, DistillConfig, parse_student
from hoi4_arena.training.run_control import TrainingRun, adam

log = logging.getLogger(__name__)

MAP_GRID = (4, 8)
"""Both encoders' maps are average-pooled to this (height, width) grid before they are compared."""
CHECKPOINT = "student.pt"
REPORT = "report.json"
EVAL_BATCH = 64


# --- encoders as frozen feature extractors ----------------------------------------------------------------


def cnn_features(encoder: CnnEncoder, pixels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A CnnEncoder's summary (N, summary_dim), as the policy reads it, and its last conv map (N, C, h, w)."""
    z = encoder._pixels(pixels)  # noqa: SLF001 -- the encoder's own uint8 -> float (clip frames as channels)
    for block in encoder.blocks:
        z = block(z)
    return encoder.summary(F.adaptive_avg_pool2d(z, SUMMARY_POOL)), z


def tower_features(encoder: TimmTowerEncoder, quadrants: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A timm tower's own features (no policy projection): the mean patch token (N, D) and the patch tokens
    as a map (N, D, h, w)."""
    x = encoder._tokens(quadrants)  # noqa: SLF001 -- tiling, resizing and normalising as the policy does
    rope = encoder._rope()  # noqa: SLF001
    for block in encoder.tower.blocks:
        x = block(x, rope=rope)
    n = x.shape[0]
    return x.mean(dim=1), x.reshape(n, *encoder.grid_hw, -1).permute(0, 3, 1, 2)


@dataclass
class FrozenEncoder:
    """An encoder run without gradients: which view it reads and what it gives per frame."""

    name: str
    module: nn.Module
    mode: str
    """'cnn' (a CnnEncoder: summary and last conv map), 'tower' (a timm tower's own features) or
    'policy_tower' (a policy's timm encoder: its summary and cell-map projection)."""
    layout: str
    reads: str
    """'global', 'clip' or 'quadrants': the view (`session_views`) it encodes."""

    @torch.no_grad()
    def __call__(self, pixels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.mode == "cnn":
            return cnn_features(self.module, pixels)
        if self.mode == "tower":
            return tower_features(self.module, pixels)
        frozen = self.module.frozen(pixels)
        return self.module.trained(frozen)

    def to(self, device: torch.device) -> FrozenEncoder:
        self.module.to(device)
        return self

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode,
            "layout": self.layout,
            "reads": self.reads,
            "parameters": sum(p.numel() for p in self.module.parameters()),
        }


def load_encoder(
    spec: str,
    *,
    layout: str = "cpu",
    tower: str = "qwen3_vit_88m_enc",
    tower_args: dict[str, Any] | None = None,
    seed: int = 0,
) -> FrozenEncoder:
    """An encoder by `spec`, frozen and in eval mode:

    - `PATH.pt`: a policy checkpoint's encoder (its own layout);
    - `PATH.safetensors`: timm tower `tower` (shaped by `tower_args`) with those weights;
    - `timm:NAME`: that tower, untrained, from `seed`;
    - `cnn` or `cnn:KEY=VALUE,...`: an untrained CnnEncoder of that PolicyConfig (the floor of a probe).

    Towers are built for `layout`'s quadrants. UserError for a spec that names nothing usable.
    """
    tower_args = dict(tower_args or {})
    if spec == "cnn" or spec.startswith("cnn:"):
        settings = parse_student(spec[4:]) if spec.startswith("cnn:") else {}
        try:
            config = PolicyConfig(**{"layout": layout, "seed": seed, **settings})
        except (TypeError, ValueError) as error:
            raise UserError(f"encoder {spec}: {error}") from None
        if config.encoder != "cnn":
            raise UserError(f"encoder {spec}: an untrained encoder is a cnn; load others from a checkpoint")
        policy = Policy(config)
        return _frozen(spec, policy.encoder, "cnn", config.layout, "global")
    if spec.startswith(TIMM_PREFIX) or spec.endswith(".safetensors"):
        name = spec[len(TIMM_PREFIX) :] if spec.startswith(TIMM_PREFIX) else tower
        if name not in TIMM_TOWERS:
            raise UserError(f"timm tower {name!r} is not supported; choose one of {', '.join(TIMM_TOWERS)}")
        from hoi4_arena.screen.layout import ViewLayout

        quadrant_hw = tuple(ViewLayout.named(layout).quadrant_size)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            try:
                encoder = TimmTowerEncoder(name, quadrant_hw, 8, 8, 0, tower_args)
            except (TypeError, ValueError, AssertionError, RuntimeError) as error:
                # timm refuses an architecture in its own words (an unknown argument, heads not dividing the width)
                text = str(error) or f"{type(error).__name__} (does num_heads divide embed_dim?)"
                raise UserError(f"--tower-args {tower_args}: timm cannot build {name} so: {text}") from None
        if spec.endswith(".safetensors"):
            encoder.load_weights(spec)
        return _frozen(spec, encoder, "tower", layout, "quadrants")
    path = Path(spec)
    if not path.is_file():
        raise UserError(
            f"encoder {spec}: no such file; give a policy checkpoint (.pt), a .safetensors tower, timm:NAME or cnn"
        )
    checkpoint = load_checkpoint(path)
    config = checkpoint.config
    encoder = checkpoint.policy.encoder
    if config.is_timm:
        return _frozen(spec, encoder, "policy_tower", config.layout, "quadrants")
    return _frozen(spec, encoder, "cnn", config.layout, "clip" if config.reads_clip else "global")


def _frozen(name: str, module: nn.Module, mode: str, layout: str, reads: str) -> FrozenEncoder:
    module.eval().requires_grad_(False)
    return FrozenEncoder(name, module, mode, layout, reads)


# --- frames ------------------------------------------------------------------------------------------------


def session_views(
    path: str | Path, layout: str, reads: tuple[str, ...], every: int = 1, clip: int = 8
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(decision indices, views) of every `every`th decision of a session: per name in `reads` a stacked
    uint8 array, 'global' (N, h, w, 3), 'clip' (N, clip, h, w, 3: the decision's global view and the
    ones before it, the first repeated at the session's start, as the data loader builds clips) or
    'quadrants' (N, 4, h, w, 3). The views are the data loader's (stored at capture, else decoded)."""
    globals_: list[np.ndarray] = []
    kept: dict[str, list[np.ndarray]] = {name: [] for name in reads}
    indices = []
    for sample in decode_session(path, DecodeSettings(layout)):
        globals_.append(sample.views["global"])
        if sample.index % every:
            continue
        indices.append(sample.index)
        for name in reads:
            if name == "clip":
                members = [max(0, sample.index - back) for back in range(clip - 1, -1, -1)]
                kept[name].append(np.stack([globals_[m] for m in members]))
            else:
                kept[name].append(sample.views[name])
    if not indices:
        raise UserError(f"{path}: holds no decision")
    return np.asarray(indices), {name: np.stack(values) for name, values in kept.items()}


def map_group(path: str | Path) -> str:
    """The map a session was played on (arena:seed of its ARENA start line; else arena:id): the sessions of
    one map stay on one side of a held-out split."""
    reader = SessionReader(path)
    first = ArenaState.from_lines([r.line for r in reader.log_records[:8]])
    manifest = reader.manifest
    return f"{first.arena}:{first.seed}" if first.arena is not None else f"{manifest.arena}:{manifest.id}"


def split_by_map(
    sessions: list[SessionSource], *, share: float = 0.25, count: int | None = None, seed: int = 0
) -> tuple[list[SessionSource], list[SessionSource]]:
    """(train, held out): whole maps (`map_group`) in a seeded order are held out until `count` sessions
    are (when given) or a `share` of the maps is; at least one map stays on each side when there are two."""
    group_of = {session.path: map_group(session.path) for session in sessions}
    groups: dict[str, list[SessionSource]] = {}
    for session in sessions:
        groups.setdefault(group_of[session.path], []).append(session)
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    held: list[str] = []
    if count is not None:
        for group in order:
            if sum(len(groups[g]) for g in held) >= count:
                break
            held.append(group)
    else:
        held = order[: round(share * len(order))]
    if len(order) >= 2:
        held = held[: len(order) - 1] or order[:1]
    train = [s for s in sessions if group_of[s.path] not in held]
    return train, [s for s in sessions if group_of[s.path] in held]


def spread(items: list, count: int) -> list:
    """`count` items spread evenly over `items` (all when count is 0 or not less than their number)."""
    if not count or count >= len(items):
        return list(items)
    return [items[round(i * (len(items) - 1) / max(count - 1, 1))] for i in range(count)]


# --- the run -----------------------------------------------------------------------------------------------


@dataclass
class Frames:
    """The frames of a set of sessions as distillation reads them."""

    pixels: torch.Tensor
    """uint8 (N, h, w, 3) the student's global views."""
    summary: torch.Tensor
    """float32 (N, D) the teacher's summaries."""
    map: torch.Tensor | None
    """float32 (N, C, *MAP_GRID) the teacher's pooled maps (None: the teacher gives none)."""
    sessions: list[str]

    def __len__(self) -> int:
        return len(self.pixels)


def read_frames(
    sessions: list[SessionSource], teacher: FrozenEncoder, layout: str, every: int, device: torch.device, bar
) -> Frames:
    task = bar.add_task("teacher features", total=len(sessions))
    pixels, summaries, maps = [], [], []
    for session in sessions:
        reads = tuple(dict.fromkeys(("global", teacher.reads)))
        _, views = session_views(session.path, layout, reads, every)
        for i in range(0, len(views["global"]), EVAL_BATCH):
            summary, spatial = teacher(torch.from_numpy(views[teacher.reads][i : i + EVAL_BATCH]).to(device))
            summaries.append(summary.float().cpu())
            if spatial is not None:
                maps.append(F.adaptive_avg_pool2d(spatial.float(), MAP_GRID).cpu())
        pixels.append(torch.from_numpy(views["global"]))
        bar.update(task, advance=1)
    return Frames(
        torch.cat(pixels),
        torch.cat(summaries),
        torch.cat(maps) if maps else None,
        [s.id for s in sessions],
    )


class Heads(nn.Module):
    """The student's summary and last conv map projected onto the teacher's (for training only)."""

    def __init__(
        self, student_dim: int, student_channels: int, teacher_dim: int, teacher_channels: int
    ) -> None:
        super().__init__()
        self.summary = nn.Linear(student_dim, teacher_dim)
        self.map = nn.Conv2d(student_channels, teacher_channels, 1) if teacher_channels else None

    def forward(
        self, summary: torch.Tensor, spatial: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.map is None:
            return self.summary(summary), None
        return self.summary(summary), self.map(F.adaptive_avg_pool2d(spatial, MAP_GRID))


@dataclass
class Standardiser:
    """Per-channel mean and spread of the teacher's training features."""

    mean: torch.Tensor
    std: torch.Tensor

    @classmethod
    def of(cls, values: torch.Tensor, dims: tuple[int, ...]) -> Standardiser:
        mean = values.mean(dim=dims, keepdim=True)
        std = values.std(dim=dims, keepdim=True).clamp(min=1e-6)
        return cls(mean[0:1], std[0:1])

    def __call__(self, values: torch.Tensor) -> torch.Tensor:
        return (values - self.mean.to(values.device)) / self.std.to(values.device)


def _terms(prediction: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(MSE, mean cosine) of standardised features; a map's cosine is per cell, over channels."""
    mse = ((prediction - target) ** 2).mean()
    cosine = F.cosine_similarity(prediction, target, dim=1, eps=1e-6).mean()
    return mse, cosine


class Distiller(nn.Module):
    """The student encoder with its heads, and the loss against the standardised teacher features."""

    def __init__(
        self, student: CnnEncoder, heads: Heads, summary: Standardiser, spatial: Standardiser | None
    ):
        super().__init__()
        self.student = student
        self.heads = heads
        self.standard_summary = summary
        self.standard_map = spatial

    def terms(self, pixels: torch.Tensor, summary: torch.Tensor, spatial: torch.Tensor | None) -> dict:
        own_summary, own_map = cnn_features(self.student, pixels)
        got_summary, got_map = self.heads(own_summary, own_map)
        mse, cosine = _terms(got_summary, self.standard_summary(summary))
        out = {"summary_mse": mse, "summary_cosine": cosine}
        if got_map is not None and spatial is not None:
            map_mse, map_cosine = _terms(got_map, self.standard_map(spatial))
            out |= {"map_mse": map_mse, "map_cosine": map_cosine}
        return out


def loss_of(terms: dict[str, torch.Tensor], config: DistillConfig) -> torch.Tensor:
    loss = terms["summary_mse"] + config.cosine_weight * (1 - terms["summary_cosine"])
    if "map_mse" in terms and config.map_weight:
        loss = loss + config.map_weight * (
            terms["map_mse"] + config.cosine_weight * (1 - terms["map_cosine"])
        )
    return loss


@torch.no_grad()
def evaluate(
    model: Distiller, frames: Frames, config: DistillConfig, device: torch.device
) -> dict[str, float]:
    """Every frame's terms, averaged over frames (batch means weighted by their frame counts)."""
    model.eval()
    sums: dict[str, float] = {}
    for i in range(0, len(frames), EVAL_BATCH):
        part = slice(i, i + EVAL_BATCH)
        spatial = frames.map[part].to(device) if frames.map is not None else None
        terms = model.terms(frames.pixels[part].to(device), frames.summary[part].to(device), spatial)
        terms["loss"] = loss_of(terms, config)
        count = len(frames.pixels[part])
        for key, value in terms.items():
            sums[key] = sums.get(key, 0.0) + float(value) * count
    model.train()
    return {key: value / len(frames) for key, value in sums.items()}


def _teacher(config: DistillConfig, layout: str) -> FrozenEncoder:
    teacher = load_encoder(
        config.teacher, layout=layout, tower=config.tower, tower_args=config.tower_args, seed=config.seed
    )
    if teacher.layout != layout:
        raise UserError(
            f"teacher {config.teacher} reads view layout {teacher.layout!r}, the student {layout!r}: give the "
            f"student layout={teacher.layout} (both encoders read the same frames' views)"
        )
    return teacher


def distill(config: DistillConfig) -> dict[str, Any]:
    """Train the student on DATA's frames and report on the held-out ones (see the module docstring)."""
    out = Path(config.out)
    run = TrainingRun(out, "distill", (CHECKPOINT,), None, resume=False)
    device = run.use(config.threads, config.device)
    student_config = config.student_config
    layout = student_config.layout

    # --- data: which sessions, then the teacher's features of their frames ---
    found = find_sessions(config.data, config.sources, layout)
    if found.val:
        train_sessions, held_sessions, held_out_by = found.train, found.val, "split"
    else:
        train_sessions, held_sessions = split_by_map(found.train, share=config.val_share, seed=config.seed)
        held_out_by = "maps"
    if not held_sessions:
        raise UserError(
            f"{config.data}: {len(found.train)} session(s) on one map, nothing to hold out for the report; "
            "record sessions on at least two maps (or seeds), or mark some split val in splits.json"
        )
    train_sessions = spread(train_sessions, config.max_sessions)
    teacher = _teacher(config, layout).to(device)
    with progress_bar() as bar:
        train = read_frames(train_sessions, teacher, layout, config.every, device, bar)
        held = read_frames(held_sessions, teacher, layout, config.every, device, bar)
    if config.map_weight == 0:
        train.map = held.map = None

    # --- the student, its heads and the standardised targets ---
    policy = Policy(student_config)
    student = policy.encoder
    with torch.no_grad():
        _, probe_map = cnn_features(student, train.pixels[:1])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed + 1)
        heads = Heads(
            student.summary_dim,
            probe_map.shape[1],
            train.summary.shape[1],
            train.map.shape[1] if train.map is not None else 0,
        )
    model = Distiller(
        student,
        heads,
        Standardiser.of(train.summary, (0,)),
        Standardiser.of(train.map, (0, 2, 3)) if train.map is not None else None,
    ).to(device)
    model.train()
    optimizer = adam(model.parameters(), config.lr, config.weight_decay)
    before = {
        "train": evaluate(model, train, config, device),
        "held_out": evaluate(model, held, config, device),
    }

    # --- the loop: --steps steps over seeded permutations of the training frames ---
    order = torch.Generator().manual_seed(config.seed)
    queue: list[int] = []
    history = []
    with progress_bar() as bar:
        task = bar.add_task("distil", total=config.steps)
        for step in range(1, config.steps + 1):
            if len(queue) < config.batch:
                queue += torch.randperm(len(train), generator=order).tolist()
            index, queue = torch.tensor(queue[: config.batch]), queue[config.batch :]
            spatial = train.map[index].to(device) if train.map is not None else None
            terms = model.terms(train.pixels[index].to(device), train.summary[index].to(device), spatial)
            loss = loss_of(terms, config)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss = loss.detach()
            if step % max(1, config.steps // 20) == 0 or step == config.steps:
                history.append(
                    {"step": step, **{k: float(v.detach()) for k, v in terms.items()}, "loss": float(loss)}
                )
            bar.update(task, advance=1, description=f"distil loss {float(loss):.3f}")
    after = {
        "train": evaluate(model, train, config, device),
        "held_out": evaluate(model, held, config, device),
    }

    # --- save: a policy checkpoint whose encoder is the student ---
    model.cpu()
    data = {
        "data_dir": config.data,
        "held_out_by": held_out_by,
        "train": train.sessions,
        "val": held.sessions,
        "frames": {"train": len(train), "val": len(held)},
    }
    extra = {
        "distill": {
            "config": config.to_dict(),
            "teacher": teacher.describe(),
            "heads": {k: v.detach().clone() for k, v in heads.state_dict().items()},
            "data": data,
            "before": before,
            "after": after,
        }
    }

    def save(path: Path, full: bool) -> Path:
        return save_checkpoint(path, policy, provenance=Provenance(data=data, seed=config.seed), extra=extra)

    run.start(config.to_dict(), write=save, tensorboard=False)
    run.save(CHECKPOINT)
    own_flags = ("layout", "encoder", "freeze_blocks")  # train-bc's own options, not --policy's
    widths = ",".join(f"{k}={v}" for k, v in config.student.items() if k not in own_flags)
    result = {
        "model": "distilled student",
        "steps": config.steps,
        "checkpoint": str(out / CHECKPOINT),
        "report": str(out / REPORT),
        "before": before,
        "after": after,
        "history": history,
        "teacher": teacher.describe(),
        "student": {
            "config": student_config.to_dict(),
            "parameters": sum(p.numel() for p in student.parameters()),
            "weights_sha256": weights_sha256(student.state_dict()),
        },
        "as_policy": f"hoi4-arena train-bc DATA OUT --init {out / CHECKPOINT} --layout {layout}"
        + (f" --freeze-blocks {student_config.freeze_blocks}" if student_config.freeze_blocks else "")
        + (f" --policy {widths}" if widths else ""),
        "data": {k: v for k, v in data.items() if k not in ("train", "val")}
        | {"sessions": {"train": len(train.sessions), "val": len(held.sessions)}},
        "skipped": found.skipped,
        "device": str(device),
        "threads": torch.get_num_threads(),
        "seconds": run.seconds,
    }
    return run.finish(result, report=REPORT, indent=1)
