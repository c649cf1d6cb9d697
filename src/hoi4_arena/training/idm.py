"""Training the inverse dynamics model, its held-out report, and labelling videos with it (VPT recipe).

`train_idm(config)`, read top to bottom: settings and resume, data (every decision's views of every
session held in memory, decoded once), model and optimizer, the loop (a seeded shuffle of the
trainable decisions -> windows of frames around each -> teacher-forced exact log-likelihood of its 8
tokens -> AdamW step), and after each epoch the held-out report, checkpoints and TensorBoard scalars.
With `--sequence S` the shuffled items are chunks of S consecutive decisions (each session tiled from
its first decision; a chunk holding no trainable decision is left out), one window of frames each; a
step holds batch // S of them, and the loss is the mean over their trainable decisions (those past the
session's end in its last chunk are padding).

- Data: sessions with real inputs (`--sources`, human and scripted by default) found as train-bc
  finds them (`data.sources.find_sessions`: split val is held out); each decision's views come from
  `data.decode.decode_session` (stored views or decoded video), its tokens from the recorded inputs
  in order (`screen.tokens.in_order`: the events moved to the decision's first slots; frames 200 ms
  apart do not show which 25 ms slot an event fell in, and learning the slot spread each event's
  probability over eight slots, so that argmax decoding labelled most of them no-ops).
  Decisions that are bursts or without focus carry no loss (as in train-bc) but still serve as
  frames of their neighbours' windows.
- Saves: OUT/epoch-NNNN.pt, OUT/last.pt after each epoch; OUT/progress.pt (weights, optimizer, position
  in the epoch's order) after each epoch and on a clean stop (--max-steps, Ctrl+C). `resume=True`
  goes on from progress.pt with the run's own settings; the order of an epoch depends only on the seed
  and the epoch, so a resumed run sees the batches an uninterrupted one would.
- Held-out report (`evaluate`): the IDM's argmax labels of every held-out decision against the
  recorded tokens in order: kind accuracy per slot overall and per true token kind (none, move, button, wheel,
  key), key and button accuracy, pointer error in lattice units where both are moves, and the share of
  decisions whose eight kinds are all right, for decisions with input and without.

`label(config)` writes labels (sessions/labels.py) for every session without inputs.

Try: hoi4-arena train-idm runs/ out/idm --epochs 2 && hoi4-arena label out/idm/last.pt runs/videos
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hoi4_arena.data.decode import DecisionSample, DecodeSettings, decode_session
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import weights_sha256
from hoi4_arena.models.idm import InverseDynamics, load_idm, save_idm, window_indices
from hoi4_arena.models.policy import Observation
from hoi4_arena.screen.tokens import BUTTON_KINDS, KEY_BASE, MOVE, NONE, WHEEL_DOWN, WHEEL_UP, in_order
from hoi4_arena.terminal import progress_bar
from hoi4_arena.training.idm_config import LabelConfig, TrainIDMConfig
from hoi4_arena.training.run_control import CONFIG, LAST, PROGRESS, TrainingRun, adam, device_of

log = logging.getLogger(__name__)

REPORT = "report.json"
KIND_GROUPS = ("none", "move", "button", "wheel", "key")
BUTTON_FIRST, BUTTON_LAST = min(BUTTON_KINDS.values()), max(BUTTON_KINDS.values())


def kind_groups(kinds: np.ndarray) -> np.ndarray:
    """Token kinds -> index into KIND_GROUPS."""
    group = np.full_like(kinds, 2)
    group[kinds == NONE] = 0
    group[kinds == MOVE] = 1
    group[(kinds == WHEEL_UP) | (kinds == WHEEL_DOWN)] = 3
    group[kinds >= KEY_BASE] = 4
    return group


# --- data: every decision of a session, held -------------------------------------------------------


@dataclass
class SessionArrays:
    """One session's decisions: views (n, ...), speed (n,), pointer (n, 2), tokens (n, 8, 3), trainable (n,)."""

    id: str
    global_view: np.ndarray
    quadrants: np.ndarray
    fovea: np.ndarray
    speed: np.ndarray
    pointer: np.ndarray
    tokens: np.ndarray
    trainable: np.ndarray

    @classmethod
    def of(cls, id: str, samples: list[DecisionSample]) -> SessionArrays:
        return cls(
            id,
            np.stack([s.views["global"] for s in samples]),
            np.stack([s.views["quadrants"] for s in samples]),
            np.stack([s.views["fovea"] for s in samples]),
            np.array([s.speed for s in samples], np.int64),
            np.array([s.pointer for s in samples], np.int64),
            in_order(np.stack([s.tokens for s in samples]).astype(np.int64)),
            np.array([s.trainable for s in samples], bool),
        )

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.global_view, self.quadrants, self.fovea))

    def __len__(self) -> int:
        return len(self.tokens)


def items_of(sessions: list[SessionArrays], sequence: int) -> list[tuple[SessionArrays, int]]:
    """What a batch is made of: each trainable decision (sequence 0), or the first decision of each chunk
    of `sequence` consecutive decisions that holds a trainable one."""
    if not sequence:
        return [(a, k) for a in sessions for k in range(len(a)) if a.trainable[k]]
    return [
        (a, k) for a in sessions for k in range(0, len(a), sequence) if a.trainable[k : k + sequence].any()
    ]


def batch_of(
    items: list[tuple[SessionArrays, int]], behind: int, ahead: int, decisions: int = 1
) -> tuple[Observation, torch.Tensor, torch.Tensor]:
    """The window of each (session, first decision) `items_of` made: obs (N, behind + decisions + ahead,
    ...), the tokens of its decisions (N * decisions, 8, 3) and which of them carry a loss (N * decisions,):
    the trainable ones inside the session (a chunk's decisions past its end repeat its last one)."""
    rows = [(arrays, window_indices(k, len(arrays), behind, ahead, decisions)) for arrays, k in items]

    def stack(name: str) -> torch.Tensor:
        return torch.from_numpy(np.stack([getattr(a, name)[index] for a, index in rows]))

    obs = Observation(
        stack("global_view"), stack("quadrants"), stack("fovea"), stack("speed"), stack("pointer")
    )
    # Each window's own decisions, the last one repeated past the session's end (padding, no loss).
    own = [(a, window_indices(k, len(a), 0, 0, decisions), np.arange(k, k + decisions)) for a, k in items]
    tokens = torch.from_numpy(np.concatenate([a.tokens[index] for a, index, _ in own]))
    trainable = [a.trainable[index] & (ks < len(a)) for a, index, ks in own]
    return obs, tokens, torch.from_numpy(np.concatenate(trainable))


def _hold(sources: list, layout: str, limit_gb: float, bar: Any) -> list[SessionArrays]:
    out, total = [], 0
    task = bar.add_task("decoding sessions", total=len(sources))
    for source in sources:
        arrays = SessionArrays.of(source.id, list(decode_session(source.path, DecodeSettings(layout))))
        total += arrays.nbytes
        if total > limit_gb * 2**30:
            raise UserError(
                f"the sessions' views need more than --hold-gb {limit_gb:g} GiB of memory; give a larger "
                "--hold-gb or fewer sessions"
            )
        out.append(arrays)
        bar.update(task, advance=1)
    return out


# --- the held-out report ---------------------------------------------------------------------------


def evaluate(
    model: InverseDynamics,
    sessions: list[SessionArrays],
    batch: int,
    device: torch.device,
    sigma: float = 0.0,
) -> dict[str, Any] | None:
    """The report of the module docstring over every trainable decision of `sessions` (`batch`:
    decisions at once, as in training)."""
    cfg = model.config
    items = items_of(sessions, cfg.sequence)
    if not items:
        return None
    model.eval()
    predicted, truth, nll, count = [], [], 0.0, 0
    windows = max(batch // cfg.decisions, 1)
    with torch.no_grad():
        for i in range(0, len(items), windows):
            obs, tokens, trainable = batch_of(items[i : i + windows], cfg.behind, cfg.ahead, cfg.decisions)
            obs, tokens, trainable = obs.to(device), tokens.to(device), trainable.to(device)
            nll += float(-model(obs, tokens, sigma).logp[trainable].sum())
            labels, _ = model.label(obs)
            predicted.append(labels[trainable].cpu().numpy())
            truth.append(tokens[trainable].cpu().numpy())
            count += int(trainable.sum())
    model.train()
    return report(np.concatenate(predicted), np.concatenate(truth), nll / count)


def report(predicted: np.ndarray, truth: np.ndarray, nll: float | None = None) -> dict[str, Any]:
    """Labelled tokens (N, 8, 3) against the true ones: the accuracies of the module docstring."""
    pk, tk = predicted[..., 0], truth[..., 0]
    right = pk == tk
    groups = kind_groups(tk)

    def share(mask: np.ndarray) -> float | None:
        return float(right[mask].mean()) if mask.any() else None

    moves = (tk == MOVE) & (pk == MOVE)
    error = np.hypot(*(predicted[..., 1:] - truth[..., 1:]).transpose(2, 0, 1).astype(float))[moves]
    with_input = (tk != NONE).any(axis=1)
    whole = right.all(axis=1)
    return {
        "decisions": len(truth),
        "nll": nll,
        "kind_accuracy": float(right.mean()),
        "kind_accuracy_by_kind": {name: share(groups == g) for g, name in enumerate(KIND_GROUPS)},
        "slots_by_kind": {name: int((groups == g).sum()) for g, name in enumerate(KIND_GROUPS)},
        "key_accuracy": share(tk >= KEY_BASE),
        "button_accuracy": share((tk >= BUTTON_FIRST) & (tk <= BUTTON_LAST)),
        "pointer_error_lattice": {
            "moves": int(moves.sum()),
            "mean": float(error.mean()) if error.size else None,
            "median": float(np.median(error)) if error.size else None,
        },
        "decision_kind_accuracy": float(whole.mean()),
        "decision_kind_accuracy_with_input": float(whole[with_input].mean()) if with_input.any() else None,
        "decision_kind_accuracy_without_input": float(whole[~with_input].mean())
        if (~with_input).any()
        else None,
        "decisions_with_input": int(with_input.sum()),
    }


# --- the run ---------------------------------------------------------------------------------------


def _progress_file(path: Path) -> Any:
    saved = load_idm(path)
    if "train_config" not in saved.extra:
        raise UserError(f"{path} is not a train-idm progress file")
    return saved


def train_idm(
    config: TrainIDMConfig, *, resume: bool = False, changes: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Train (or resume) an IDM; returns the summary the command prints."""
    out = Path(config.out)
    run = TrainingRun(out, "train-idm", (PROGRESS, LAST, CONFIG), _progress_file, resume=resume)
    saved = run.saved
    if saved is not None:
        config = run.resumed(TrainIDMConfig.from_dict(saved.extra["train_config"]), changes, ("data", "out"))
    device = run.use(config.threads, config.device)
    idm_config = config.idm_config

    # --- data ---
    data = find_sessions(config.data, config.sources, config.layout)
    described = {
        "train": [[s.id, s.decisions] for s in data.train],
        "val": [[s.id, s.decisions] for s in data.val],
    }
    if saved is not None and saved.extra["data"] != described:
        raise UserError(
            f"the sessions under {config.data} changed since this run started; resume needs the same data"
        )
    with progress_bar() as bar:
        train = _hold(data.train, config.layout, config.hold_gb, bar)
        val = _hold(data.val, config.layout, config.hold_gb, bar)
    items = items_of(train, idm_config.sequence)
    decisions = sum(int(a.trainable.sum()) for a in train)
    if not items:
        raise UserError(f"no trainable decision in the training sessions under {config.data}")
    if not val:
        log.warning("no held-out session (split val) under %s: no held-out report", config.data)

    # --- model and optimizer ---
    model = InverseDynamics(idm_config, load_weights=saved is None).to(device)
    if saved is not None:
        model.load_state_dict(saved.model.state_dict())
    model.train()
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = adam(trained, config.lr, config.weight_decay)
    progress: dict[str, Any] = {"step": 0, "epoch": 0, "position": 0, "history": [], "train_seconds": 0.0}
    if saved is not None:
        optimizer.load_state_dict(saved.optimizer)
        progress.update({k: saved.extra[k] for k in progress})

    def save(path: Path, with_optimizer: bool) -> Path:
        extra = {"train_config": config.to_dict(), "data": described, **progress}
        return save_idm(
            path,
            model,
            provenance={"data": described, "seed": config.seed, "data_dir": str(config.data)},
            optimizer=optimizer if with_optimizer else None,
            extra=extra,
        )

    run.start({"train": config.to_dict(), "idm": idm_config.to_dict()}, write=save)
    held_out = progress["history"][-1]["held_out"] if progress["history"] else None
    stop = None
    with run.loop() as bar:
        for epoch in range(progress["epoch"], config.epochs):
            order = np.random.default_rng([config.seed, epoch]).permutation(len(items))
            step = max(config.batch // idm_config.decisions, 1)  # --batch counts decisions
            batches = [order[i : i + step] for i in range(0, len(order), step)]
            task = bar.add_task(
                f"epoch {epoch + 1}/{config.epochs}", total=len(batches), completed=progress["position"]
            )
            tick = time.monotonic()
            for b in range(progress["position"], len(batches)):
                obs, tokens, trainable = batch_of(
                    [items[i] for i in batches[b]], idm_config.behind, idm_config.ahead, idm_config.decisions
                )
                tokens, trainable = tokens.to(device), trainable.to(device)
                scores = model(obs.to(device), tokens, config.pointer_sigma)
                loss = -scores.logp[trainable].mean()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if config.grad_clip:
                    torch.nn.utils.clip_grad_norm_(trained, config.grad_clip)
                optimizer.step()
                progress["step"] += 1
                progress["position"] = b + 1
                now = time.monotonic()
                progress["train_seconds"] += now - tick
                tick = now
                right = (scores.kind_pred == tokens[..., 0])[trainable]
                run.log(
                    progress["step"],
                    {"train/loss": loss.item(), "train/kind_accuracy": float(right.float().mean())},
                    task=task,
                    advance=1,
                    description=f"epoch {epoch + 1}/{config.epochs} loss {loss.item():.3f}",
                )
                if run.stop:
                    stop = run.stop
                elif config.max_steps and progress["step"] >= config.max_steps:
                    stop = "max_steps"
                if stop:
                    break
            if stop and progress["position"] < len(batches):
                break
            # --- end of epoch ---
            held_out = evaluate(model, val, config.batch, device, config.pointer_sigma) if val else None
            progress["history"].append(
                {"epoch": epoch + 1, "step": progress["step"], "loss": loss.item(), "held_out": held_out}
            )
            held = held_out or {}
            run.log(
                progress["step"],
                {
                    **{f"held_out/{k}": v for k, v in held.items() if isinstance(v, int | float)},
                    **{
                        f"held_out/kind_accuracy_{k}": v
                        for k, v in (held.get("kind_accuracy_by_kind") or {}).items()
                    },
                },
            )
            progress["epoch"], progress["position"] = epoch + 1, 0
            run.checkpoint(f"epoch-{epoch + 1:04d}.pt")
            if stop:
                break
        stop = stop or "epochs"
        run.final_save(stop != "epochs")
    summary = {
        "stopped": stop,
        "steps": progress["step"],
        "epochs_completed": progress["epoch"],
        "train_decisions": decisions,
        "held_out": held_out,
        "checkpoint": str(out / LAST),
        "progress": str(out / PROGRESS),
        "weights_sha256": weights_sha256(model.state_dict()),
        "sessions": {"train": len(train), "val": len(val), "skipped": data.skipped},
        "window": {"behind": idm_config.behind, "ahead": idm_config.ahead, "sequence": idm_config.sequence},
        "parameters": sum(p.numel() for p in model.parameters()),
        "device": str(device),
        "seconds": run.seconds,
    }
    return run.finish(summary, report=REPORT)


# --- labelling -------------------------------------------------------------------------------------


def _session_folders(data: Path) -> list[Path]:
    from hoi4_arena.sessions.format import MANIFEST
    from hoi4_arena.sessions.splits import find_session_folders

    if (data / MANIFEST).is_file():
        return [data]
    return [Path(p) for p in find_session_folders(data)]


def label(config: LabelConfig) -> dict[str, Any]:
    """Label every session without inputs under `config.data` (see sessions/labels.py)."""
    from hoi4_arena.sessions.labels import write_labels
    from hoi4_arena.sessions.reader import SessionReader

    device = device_of(config.device)
    checkpoint = load_idm(config.checkpoint, layout=config.layout, device=device)
    model, idm = checkpoint.model, checkpoint.config
    layout = idm.policy.layout
    data = Path(config.data)
    if not data.exists():
        raise UserError(f"{data}: no such folder")
    folders = _session_folders(data)
    single = folders == [data]
    about = {
        "checkpoint": str(Path(config.checkpoint).resolve()),
        "weights_sha256": weights_sha256(model.state_dict()),
        "layout": {"name": layout, "version": checkpoint.layout["version"]},
        "window": {"behind": idm.behind, "ahead": idm.ahead},
    }
    done, skipped = [], []
    for folder in folders:
        try:
            reader = SessionReader(folder)
        except UserError as error:
            if single:
                raise
            skipped.append({"session": str(folder), "reason": str(error)})
            continue
        if reader.inputs and not config.force:
            why = (
                f"{folder}: has {len(reader.inputs)} real inputs; labels are for sessions without inputs "
                "(give --force to label it anyway: its own files are never changed)"
            )
            if single:
                raise UserError(why)
            skipped.append({"session": str(folder), "reason": why})
            continue
        try:
            checkpoint.config.policy.view_layout.check_screen(reader.size)
        except ValueError as error:
            raise UserError(f"{folder}: {error}") from None
        frames = [w.frame for w in reader.windows().windows]
        tokens, logp = _label_session(model, folder, layout, config.batch, device)
        if len(tokens) != len(frames):
            raise UserError(
                f"{folder}: decoded {len(tokens)} decisions but its frame log holds {len(frames)}"
            )
        index = write_labels(folder, frames, tokens, logp, config.min_logp, about)
        done.append(
            {
                "session": str(folder),
                "decisions": index["decisions"],
                "dropped": index["dropped"],
                "with_input": int((tokens[..., 0] != NONE).any(axis=1).sum()),
                "mean_token_logp": float(logp.mean()) if len(logp) else None,
            }
        )
    if not done and skipped:
        raise UserError(
            f"no session labelled under {data}: {len(skipped)} skipped (first: {skipped[0]['reason']})"
        )
    return {"labelled": done, "skipped": skipped, "checkpoint": about["checkpoint"]}


def _label_session(
    model: InverseDynamics, folder: Path, layout: str, batch: int, device: torch.device
) -> tuple[np.ndarray, np.ndarray]:
    """Stream the session once, labelling each window of decisions (one, or `sequence` of them) as soon as
    the frames `ahead` of its last decision arrived; every decision labelled once, in order."""
    behind, ahead, per = model.config.behind, model.config.ahead, model.config.decisions
    windows = max(batch // per, 1)  # `batch` counts decisions
    recent: dict[int, DecisionSample] = {}
    tokens: list[np.ndarray] = []
    logp: list[np.ndarray] = []
    pending: list[int] = []  # the first decision of each window waiting for a run

    def run(ks: list[int], count: int) -> None:
        rows = [
            SessionArrays.of("", [recent[j] for j in window_indices(k, count, behind, ahead, per)])
            for k in ks
        ]
        obs = Observation(
            *(
                torch.from_numpy(np.stack([getattr(r, n) for r in rows]))
                for n in ("global_view", "quadrants", "fovea", "speed", "pointer")
            )
        )
        labelled, lp = model.label(obs.to(device))
        tokens.extend(labelled.cpu().numpy())
        logp.extend(lp.float().cpu().numpy())

    count = 0
    start = 0  # the first decision of the next window
    for sample in decode_session(folder, DecodeSettings(layout)):
        recent[sample.index] = sample
        count = sample.index + 1
        if count > start + per - 1 + ahead:
            pending.append(start)
            start += per
        if len(pending) >= windows:
            run(pending, count)
            for j in [j for j in recent if j < start - behind]:  # no later window sees them
                del recent[j]
            pending = []
    pending += list(range(start, count, per))  # the windows the session's end cut short
    if pending:
        run(pending, count)
    # The last window's decisions past the session's end (its last frame repeated) are no decisions.
    return (
        np.array(tokens[:count], np.int64).reshape(-1, 8, 3),
        np.array(logp[:count], np.float32).reshape(-1, 8),
    )
