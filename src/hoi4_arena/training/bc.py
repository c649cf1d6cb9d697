"""Behaviour cloning: the policy learns to give the demonstrated 8 tokens of each recorded decision.

One function, `train_bc(config)`, read top to bottom: settings and resume, data, model and optimizer,
the loop (batch -> forward over the window -> masked loss -> optimizer step -> logs and saves), and the
end of each epoch (held-out metrics, checkpoints). The pieces:

- Data: `hoi4_arena.data` streams windows of `window` decisions (plus `lead_in` decisions of context
  without loss) from the session folders, several sessions at once through a seeded shuffle buffer,
  decoded and turned into views by `workers` background processes (numpy `compute_views`, the same
  bytes as the torch twin; on this CPU-only project the views are never computed on a GPU).
- Memory: every window starts from a fresh memory whose previous action is the demonstrated action of
  the decision before the window (no-ops at a session's start). Windows are shuffled, so a state
  carried from the previous batch would belong to another session; `lead_in` buys context instead.
- Loss: -log p of the demonstrated tokens of a decision (the sum over its 8 slots), averaged over the
  decisions that count: in the window's region, not padding, not a burst, recorded with focus, and --
  with `look_before_click` -- not a decision that presses after a move. Masked, never relabelled.
  `lr_decay_minutes` cosine-decays the learning rate to 0 over that much training time (the run's
  accumulated train_seconds, so a resumed run goes on along the same curve; the rate then depends on
  the machine's speed, as a --max-minutes run's length does); `lr_decay_steps` does the same over
  optimizer steps, which a machine's speed cannot change (with --max-steps, the same run on any
  machine of the same kind gives the same weights). `init` starts the weights from a
  checkpoint of the same architecture (a second round of training on more data, e.g. corrections); the
  optimizer starts afresh. `pointer_sigma` scores moves against a Gaussian blob
  (models/pointer_target.py). `aim_weight` multiplies the pointer terms of aim moves (`aim_moves`: the
  last move before a mouse button token, where a click or a drag lands); the other moves of a path keep
  weight 1. The held-out loss is never weighted. `skills` conditions the policy on the scripted
  player's intents: each decision's intent (`training/skills.py`, from `players/intents.py`) is an input
  of the policy (PolicyConfig.intents), and the checkpoint records the vocabulary it was trained with.
- Objectives (training/objectives.py): `--auxiliary dense|sparse` and `--objective xm` add training-only
  losses read from the memory through heads of their own, each logged apart (train/objective_NAME,
  held_out/objective_NAME, `objectives` in the epoch reports). The heads are saved in progress.pt only,
  never in the policy checkpoints, and their gradient is clipped on its own, so the policy's clipping
  is plain BC's: with every objective off, or at weight 0, the weights are plain BC's bit for bit.
- Saves: OUT/epoch-NNNN.pt and OUT/last.pt after each epoch; OUT/progress.pt (model, optimizer, RNG
  states, data position, counters) every `save_every` seconds and after each epoch; a clean stop
  (--max-minutes, --max-steps, Ctrl+C) saves progress.pt and last.pt. `resume=True` continues from
  progress.pt with the run's stored settings and, on the CPU with the same threads, gives the same
  weights as an uninterrupted run.
- Logs: TensorBoard in OUT/tb (loss, loss per token kind, lr, decisions/s, held-out metrics), a rich
  progress bar on stderr, and the returned summary (the command prints it as JSON).

Try: hoi4-arena train-bc runs/ out/bc --workers 2 --epochs 1
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import Batch, DataPosition, DataSettings, WindowLoader
from hoi4_arena.data.shuffle import sample_refs
from hoi4_arena.data.sources import EXPERT_SOURCE, IDM_SOURCE, DataSet, SessionSource, find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.maps.held_out import refuse_suite_maps, session_map
from hoi4_arena.models.checkpoint import Provenance, load_checkpoint, save_checkpoint, weights_sha256
from hoi4_arena.models.policy import Observation, Policy, PolicyOutput, PolicyState
from hoi4_arena.screen.tokens import BUTTON_KINDS, KEY_BASE, MOVE, NONE, WHEEL_DOWN, WHEEL_UP
from hoi4_arena.sessions.format import load_manifest
from hoi4_arena.training.advantage import AdvantageWeights
from hoi4_arena.training.bc_config import BCConfig
from hoi4_arena.training.objectives import Objectives, build_objectives
from hoi4_arena.training.run_control import (
    CONFIG,
    LAST,
    PROGRESS,
    TrainingRun,
    adam,
    restore_rng_states,
    rng_states,
)

log = logging.getLogger(__name__)

BUTTON_FIRST, BUTTON_LAST = min(BUTTON_KINDS.values()), max(BUTTON_KINDS.values())
KIND_GROUPS = ("none", "move", "button", "wheel", "key")


def kind_groups(kinds: torch.Tensor) -> torch.Tensor:
    """Token kinds -> index into KIND_GROUPS (none, move, mouse button, wheel, key)."""
    group = torch.full_like(kinds, 2)  # mouse buttons: kinds 2..7
    group[kinds == NONE] = 0
    group[kinds == MOVE] = 1
    group[(kinds == WHEEL_UP) | (kinds == WHEEL_DOWN)] = 3
    group[kinds >= KEY_BASE] = 4
    return group


def to_device(
    batch: Batch, policy: Policy, device: torch.device, intents: Any = None
) -> tuple[Observation, torch.Tensor, torch.Tensor, PolicyState, torch.Tensor]:
    """A batch as the policy's inputs: observation (B, T), tokens (B, T, 8, 3), loss mask (B, T), state,
    and the tokens sent (B, T, 8, 3: the policy's `fed`, the targets except on expert-labelled games);
    with `intents` (a `training.skills.SessionIntents`) each decision's intent joins the observation, and
    for a policy with `held_inputs` the buttons and keys held down when each decision began."""
    a = {k: torch.from_numpy(v).to(device) for k, v in batch.arrays.items()}
    intent = None if intents is None else torch.from_numpy(intents.for_batch(batch)).to(device)
    held = a["held"] if policy.config.held_inputs else None
    obs = Observation(a["global_view"], a["quadrants"], a["fovea"], a["speed"], a["pointer"], intent, held)
    state = policy.initial_state(len(batch), device)
    state = PolicyState(state.hidden, a["previous"])
    return obs, a["tokens"], a["loss_mask"].float(), state, a["fed"]


def slot_nll(out: PolicyOutput, pointer_weight: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T, 8) -log p of each demonstrated token (kind, and cell and position for moves); the pointer
    terms times `pointer_weight` (B, T, 8) when given."""
    s = out.scores
    pointer = s.cell_logp + s.position_logp
    if pointer_weight is not None:
        pointer = pointer * pointer_weight
    return -(s.kind_logp + pointer)


def aim_moves(tokens: torch.Tensor) -> torch.Tensor:
    """(B, T, 8) bool: the move tokens of windows `tokens` (B, T, 8, 3) whose next token that is not a
    no-op, in the window's order across decisions, presses or releases a mouse button: the moves that put
    the pointer where a click or a drag's end lands. The other moves (the path there) are not aims."""
    kinds = tokens[..., 0].flatten(1)  # (B, T * 8) in time order
    aims = torch.zeros_like(kinds, dtype=torch.bool)
    following = torch.full_like(kinds[:, 0], NONE)  # kind of the next token that is not a no-op
    for i in range(kinds.shape[1] - 1, -1, -1):
        kind = kinds[:, i]
        aims[:, i] = (kind == MOVE) & (following >= BUTTON_FIRST) & (following <= BUTTON_LAST)
        following = torch.where(kind == NONE, following, kind)
    return aims.view(tokens.shape[:-1])


def beginnings(tokens: torch.Tensor, fed: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
    """(B, T) bool: the decisions of windows `tokens` (B, T, 8, 3) that act (a token that is not a no-op)
    after a decision that sent nothing: the one before in the window (`fed`, what was sent), or for the
    window's first the decision before the window (`previous`, (B, 8, 3))."""
    acts = (tokens[..., 0] != NONE).any(-1)
    sent = (fed[..., 0] != NONE).any(-1)
    sent_before = torch.cat([(previous[:, None, :, 0] != NONE).any(-1), sent[:, :-1]], dim=1)
    return acts & ~sent_before


class Tally:
    """Sums of the loss and its parts over decisions and slots, for means per token kind."""

    def __init__(self) -> None:
        self.loss = 0.0
        self.decisions = 0
        self.group_nll = np.zeros(len(KIND_GROUPS))
        self.group_slots = np.zeros(len(KIND_GROUPS), dtype=np.int64)
        self.kind_correct = 0
        self.slots = 0
        self.distances: list[float] = []
        # The aim moves' own (where a click or a drag's end lands): the hand's path to a target is drawn
        # at random, so the distances of all moves mostly measure how well the policy guesses a path.
        self.aim_distances: list[float] = []
        self.objectives: dict[str, list[float]] = {}  # name -> [sum of loss x decisions, decisions]

    def add_objectives(self, losses: dict[str, tuple[torch.Tensor, int]]) -> None:
        """Each objective's batch mean, weighted by the decisions it scored."""
        for name, (loss, count) in losses.items():
            total = self.objectives.setdefault(name, [0.0, 0])
            total[0] += float(loss.detach()) * count
            total[1] += count

    def add(self, out: PolicyOutput, tokens: torch.Tensor, mask: torch.Tensor, pointer: bool = False) -> None:
        nll = slot_nll(out).detach()
        counted = mask.bool()
        self.loss += float((nll.sum(-1) * mask).sum())
        self.decisions += int(counted.sum())
        groups = kind_groups(tokens[..., 0])[counted]  # (N, 8)
        picked = nll[counted]
        for g in range(len(KIND_GROUPS)):
            here = groups == g
            self.group_nll[g] += float(picked[here].sum())
            self.group_slots[g] += int(here.sum())
        if pointer:
            s = out.scores
            self.kind_correct += int((s.kind_pred[counted] == tokens[..., 0][counted]).sum())
            self.slots += int(counted.sum()) * tokens.shape[-2]
            moves = s.move & counted[..., None]
            delta = (s.pointer_pred[moves] - tokens[..., 1:][moves]).double()
            self.distances += delta.norm(dim=-1).tolist()
            aims = aim_moves(tokens) & counted[..., None]
            delta = (s.pointer_pred[aims] - tokens[..., 1:][aims]).double()
            self.aim_distances += delta.norm(dim=-1).tolist()

    def state(self) -> dict[str, Any]:
        """Plain content for progress.pt, so that a resumed epoch reports what an uninterrupted one would."""
        return {
            "loss": self.loss,
            "decisions": self.decisions,
            "group_nll": self.group_nll.tolist(),
            "group_slots": self.group_slots.tolist(),
            "kind_correct": self.kind_correct,
            "slots": self.slots,
            "distances": list(self.distances),
            "aim_distances": list(self.aim_distances),
            "objectives": {k: list(v) for k, v in self.objectives.items()},
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Tally:
        tally = cls()
        tally.loss, tally.decisions = state["loss"], state["decisions"]
        tally.group_nll = np.asarray(state["group_nll"], dtype=np.float64)
        tally.group_slots = np.asarray(state["group_slots"], dtype=np.int64)
        tally.kind_correct, tally.slots = state["kind_correct"], state["slots"]
        tally.distances = list(state["distances"])
        tally.aim_distances = list(state.get("aim_distances", ()))  # progress.pt before they were kept
        tally.objectives = {k: list(v) for k, v in state.get("objectives", {}).items()}
        return tally

    def summary(self) -> dict[str, Any]:
        mean = lambda total, n: total / n if n else None  # noqa: E731
        out: dict[str, Any] = {
            "loss": mean(self.loss, self.decisions),
            "decisions": self.decisions,
            "loss_by_kind": {
                name: mean(float(self.group_nll[g]), int(self.group_slots[g]))
                for g, name in enumerate(KIND_GROUPS)
            },
            "slots_by_kind": {name: int(self.group_slots[g]) for g, name in enumerate(KIND_GROUPS)},
        }
        if self.slots:
            d = np.asarray(self.distances)
            out["kind_accuracy"] = self.kind_correct / self.slots
            out["moves"] = len(d)
            out["pointer_distance_median"] = float(np.median(d)) if len(d) else None
            out["pointer_distance_mean"] = float(d.mean()) if len(d) else None
            out["pointer_exact"] = float((d == 0).mean()) if len(d) else None
            out["pointer_within_8"] = float((d <= 8).mean()) if len(d) else None
            a = np.asarray(self.aim_distances)
            out["aim_moves"] = len(a)
            out["aim_distance_median"] = float(np.median(a)) if len(a) else None
            out["aim_within_8"] = float((a <= 8).mean()) if len(a) else None
            out["aim_within_32"] = float((a <= 32).mean()) if len(a) else None
        if self.objectives:  # only with an objective on: plain BC's report is what it was
            out["objectives"] = {k: mean(total, int(n)) for k, (total, n) in self.objectives.items()}
            out["objective_decisions"] = {k: int(n) for k, (_, n) in self.objectives.items()}
        return out


@torch.no_grad()
def evaluate(
    policy: Policy,
    loader: WindowLoader,
    sessions: list[SessionSource],
    refs: list,
    config: BCConfig,
    device: torch.device,
    intents: Any = None,
    objectives: Objectives | None = None,
) -> dict[str, Any]:
    """Held-out loss per token kind, kind accuracy and pointer distance (lattice units), teacher-forced;
    with `objectives`, their held-out losses too (xm's negatives drawn from the seed, the same each pass)."""
    policy.eval()
    tally = Tally()
    for number, batch in enumerate(loader.ordered(sessions, refs)):
        obs, tokens, mask, state, fed = to_device(batch, policy, device, intents)
        out = policy(obs, tokens, state, chunk=None, pointer_sigma=config.pointer_sigma, fed=fed)
        tally.add(out, tokens, mask, pointer=True)
        if objectives is not None:
            tally.add_objectives(
                objectives.losses(out, batch, mask, objective_seed(config.seed, -1 - number))
            )
    policy.train()
    return tally.summary()


def objective_seed(seed: int, step: int) -> int:
    """The seed of xm's negatives at training `step` (held-out batches use negative steps): a function of
    the run's seed and the step alone, so a resumed run draws what an uninterrupted one would."""
    return (seed * 1_000_003 + step) % 2**63


def decayed_lr(lr: float, fraction: float) -> float:
    """The cosine schedule: `lr` at fraction 0 of the decay, half of it halfway, 0 from fraction 1 on."""
    return lr * 0.5 * (1 + math.cos(math.pi * min(max(fraction, 0.0), 1.0)))


def initial_weights(path: str, policy_config: Any) -> dict[str, torch.Tensor]:
    """The weights of checkpoint `path` for a run that starts from them (`--init`): its architecture must be
    this run's (the layout, encoder and every width), else UserError naming what differs. One difference
    is allowed: a run with `held_inputs` may start from a policy without them; the weights returned then
    lack the held inputs' (`Policy.held_embedding`), which keep the run's own seeded start."""
    if not Path(path).is_file():
        raise UserError(f"--init {path}: no such checkpoint file")
    checkpoint = load_checkpoint(path)
    ours, theirs = policy_config.to_dict(), checkpoint.config.to_dict()
    differ = sorted(k for k in ours.keys() | theirs.keys() if k != "seed" and ours.get(k) != theirs.get(k))
    added = differ == ["held_inputs"] and "held_inputs" not in theirs
    if differ and not added:
        listed = ", ".join(f"{k} {theirs.get(k)!r} (this run: {ours.get(k)!r})" for k in differ)
        raise UserError(f"--init {path} is another architecture: {listed}")
    return checkpoint.policy.state_dict()


# --- the run ---


def _progress_file(path: Path) -> Any:
    saved = load_checkpoint(path)
    if "train_config" not in saved.extra:
        raise UserError(f"{path} is not a train-bc progress file")
    return saved


def data_settings(config: BCConfig, data: DataSet, policy_config: Any) -> DataSettings:
    """How a run reads its data: decoding (which sessions train on labels), windows, batches, streams."""
    labelled = data.train + data.val
    return DataSettings(
        decode=DecodeSettings(
            config.layout,
            config.drop_keys,
            config.look_before_click,
            idm_sessions=tuple(s.id for s in labelled if s.source == IDM_SOURCE),
            idm_min_logp=config.idm_min_logp,
            expert_sessions=tuple(s.id for s in labelled if s.source == EXPERT_SOURCE),
            expert_played_only=config.expert_labels == "played",
            timing=config.timing,
        ),
        window=config.window,
        lead_in=config.lead_in,
        batch=config.batch,
        clip=policy_config.sizes.clip if policy_config.reads_clip else 1,
        open_sessions=config.open_sessions,
        shuffle_windows=config.shuffle_windows,
        idle_windows=config.idle_windows,
        hold_gb=config.hold_gb,
        seed=config.seed,
    )


def held_out_report(checkpoint: str | Path, config: BCConfig) -> dict[str, Any] | None:
    """The held-out metrics (`evaluate`) of a checkpoint on the val sessions of `config`'s data, the fixed
    seeded sample of windows a run with `config` scores after each epoch; None without val sessions. For
    a run stopped by --max-steps inside an epoch (DAgger's), whose last report is an epoch old."""
    data = find_sessions(config.data, config.sources, config.layout, rung=config.rung)
    if not data.val:
        return None
    saved = load_checkpoint(Path(checkpoint))
    settings = data_settings(config, data, saved.config)
    refs = sample_refs([len(settings.spans(s)) for s in data.val], config.val_windows, config.seed)
    with WindowLoader(settings, 0) as loader:
        return evaluate(saved.policy, loader, data.val, refs, config, torch.device("cpu"))


def train_bc(
    config: BCConfig, *, resume: bool = False, changes: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Train (or resume) a behaviour-cloning run; returns the summary the command prints."""
    out = Path(config.out)
    run = TrainingRun(out, "training", (PROGRESS, LAST, CONFIG, "epoch-*.pt"), _progress_file, resume=resume)
    saved = run.saved
    if saved is not None:
        config = run.resumed(BCConfig.from_dict(saved.extra["train_config"]), changes, ("data", "out"))
    device = run.use(config.threads, config.device)
    policy_config = config.policy_config

    # --- data ---
    data: DataSet = find_sessions(config.data, config.sources, config.layout, rung=config.rung)
    for found in data.train + data.val:  # the benchmark's maps are for evaluation only
        manifest = load_manifest(found.path)
        refuse_suite_maps([session_map(manifest.arena, manifest.extra)], f"session {found.path} plays")
    if saved is not None and saved.extra["data"]["train"] != data.describe()["train"]:
        raise UserError(
            f"the training sessions under {config.data} changed since this run started "
            "(other sessions or other lengths); resume needs the same data, or start a new run"
        )
    settings = data_settings(config, data, policy_config)
    val_refs = sample_refs([len(settings.spans(s)) for s in data.val], config.val_windows, config.seed)
    if not data.val:
        log.warning(
            "no held-out session (split val) under %s: no held-out metrics (record-ai --hold-out N holds "
            "out the last games; or mark some split val in DATA/splits.json)",
            config.data,
        )
    # Advantage-weighted regression: refuses, naming them, training sessions without advantages.
    advantage = (
        AdvantageWeights(data.train, settings, config.beta, config.max_weight) if config.advantage else None
    )
    # --skills: every session relabelled with its intents (refuses sessions whose inputs name no skill).
    intents = None
    if config.skills:
        from hoi4_arena.training.skills import SessionIntents

        intents = SessionIntents(data.train + data.val, settings)

    # --- model and optimizer ---
    # A resumed run's tower weights are in progress.pt: the --weights file is only read at the start.
    policy = Policy(policy_config, load_weights=saved is None).to(device)
    if saved is not None:
        policy.load_state_dict(saved.policy.state_dict())
    elif config.init is not None:
        policy.load_state_dict({**policy.state_dict(), **initial_weights(config.init, policy_config)})
    policy.train()
    # Training-only heads (--auxiliary, --objective xm): None when off; saved in progress.pt alone.
    objectives = build_objectives(config, policy_config, data.train + data.val, data.train, settings)
    trained = [p for p in policy.parameters() if p.requires_grad]
    heads: list[torch.nn.Parameter] = []
    if objectives is not None:
        objectives.to(device)
        if saved is not None:
            objectives.load_state_dict(saved.extra["objectives"])
        heads = list(objectives.parameters())
    optimizer = adam(trained + heads, config.lr, config.weight_decay)
    progress: dict[str, Any] = {
        "step": 0,
        "position": DataPosition(0, tuple(0 for _ in range(max(config.workers, 1)))).to_dict(),
        "epochs_completed": 0,
        "decisions_seen": 0,
        "decisions_trained": 0,
        "masked": {"burst": 0, "look_before_click": 0, "other": 0},
        "train_seconds": 0.0,
        "history": [],
        "skipped": [],
        "epoch_tally": Tally().state(),
    }
    if saved is not None:
        optimizer.load_state_dict(saved.optimizer)
        restore_rng_states(saved.extra["rng"])
        progress.update({k: saved.extra[k] for k in progress})
    provenance = Provenance(data={**data.describe(), "init": config.init}, seed=config.seed)

    def save(path: Path, with_optimizer: bool) -> Path:
        progress["epoch_tally"] = epoch_tally.state()
        extra = {"train_config": config.to_dict(), "data": data.describe(), **progress}
        if intents is not None:  # what the intent input means: players/intents.py's vocabulary
            extra["intents"] = {k: intents.stats[k] for k in ("version", "intents")}
        if with_optimizer:
            extra["rng"] = rng_states()
            if objectives is not None:
                extra["objectives"] = {k: v.detach().cpu() for k, v in objectives.state_dict().items()}
        return save_checkpoint(
            path, policy, provenance=provenance, optimizer=optimizer if with_optimizer else None, extra=extra
        )

    run.start(
        {
            "train": config.to_dict(),
            "policy": policy_config.to_dict(),
            "layout": policy_config.view_layout.to_dict(),
        },
        write=save,
    )
    loader = WindowLoader(settings, config.workers)
    position = DataPosition.from_dict(progress["position"])
    held_out = progress["history"][-1]["held_out"] if progress["history"] else None
    epoch_tally = Tally.from_state(progress["epoch_tally"])
    window_start, window_decisions = time.monotonic(), 0

    def over_budget() -> str | None:
        if run.stop:
            return run.stop
        if config.max_steps and progress["step"] >= config.max_steps:
            return "max_steps"
        if run.minutes_over(config.max_minutes):
            return "max_minutes"
        return None

    # --- the loop ---
    with run.loop(loader) as bar:
        if config.hold_gb:
            everything = data.train + data.val
            task = bar.add_task(
                "reading the data into memory", total=sum(len(settings.spans(s)) for s in everything)
            )
            held = loader.hold(everything, on_batch=lambda count: bar.update(task, advance=count))
            how = "data held in memory" + (" compressed" if loader.held_compressed else "")
            bar.update(task, description=how if held else "data streamed (too large to hold)")
            log.info("%s: %.2f GiB", how if held else "data not held", loader.held_bytes / 2**30)
        stop = over_budget()
        for epoch in range(position.epoch, config.epochs):
            if stop:
                break
            task = bar.add_task(
                f"epoch {epoch + 1}/{config.epochs}", total=loader.batches_in_epoch(data.train, epoch)
            )
            bar.update(task, completed=sum(-(-start // config.batch) for start in position.starts))
            tick = time.monotonic()
            for batch, where in loader.epoch(data.train, epoch, position):
                obs, tokens, mask, state, fed = to_device(batch, policy, device, intents)
                out_ = policy(
                    obs,
                    tokens,
                    state,
                    chunk=config.chunk or None,
                    pointer_sigma=config.pointer_sigma,
                    fed=fed,
                )
                counted = mask.sum()
                weight = None
                if config.aim_weight != 1:
                    weight = 1 + (config.aim_weight - 1) * aim_moves(tokens).to(mask.dtype)
                scored = mask
                if advantage is not None:  # each decision's loss times exp(A / beta), clipped
                    scored = mask * torch.from_numpy(advantage.for_batch(batch)).to(device)
                if config.begin_weight != 1:  # the rare decisions that begin a step
                    begins = beginnings(tokens, fed, state.previous).to(mask.dtype)
                    scored = scored * (1 + (config.begin_weight - 1) * begins)
                if config.idm_weight != 1 and settings.decode.idm_sessions:  # labelled sessions' weight
                    ids = settings.decode.idm_sessions
                    rows = [config.idm_weight if key[0] in ids else 1.0 for key in batch.keys]
                    scored = scored * torch.tensor(rows, device=device)[:, None]
                loss = (slot_nll(out_, weight).sum(-1) * scored).sum() / counted.clamp(min=1)
                total = loss
                extra_losses = {}
                if objectives is not None:
                    extra_losses = objectives.losses(
                        out_, batch, mask, objective_seed(config.seed, progress["step"])
                    )
                    total = loss + objectives.total(extra_losses)
                optimizer.zero_grad(set_to_none=True)
                grad_norm = 0.0
                if config.lr_decay_minutes:
                    trained_s = progress["train_seconds"] + time.monotonic() - tick
                    for group in optimizer.param_groups:
                        group["lr"] = decayed_lr(config.lr, trained_s / (config.lr_decay_minutes * 60))
                elif config.lr_decay_steps:
                    for group in optimizer.param_groups:
                        group["lr"] = decayed_lr(config.lr, progress["step"] / config.lr_decay_steps)
                if counted > 0:  # a batch of bursts only teaches nothing; skip its update
                    total.backward()
                    if config.grad_clip:
                        grad_norm = float(torch.nn.utils.clip_grad_norm_(trained, config.grad_clip))
                        if heads:  # on their own: the policy's norm is what it would be without them
                            torch.nn.utils.clip_grad_norm_(heads, config.grad_clip)
                    optimizer.step()

                # --- counters and logs ---
                a = batch.arrays
                progress["step"] += 1
                progress["decisions_seen"] += int(a["region"].sum())
                progress["decisions_trained"] += int(counted)
                progress["masked"]["burst"] += int((a["region"] & a["burst"]).sum())
                looked = (
                    a["region"] & a["pressed_after_move"] & ~a["burst"] if config.look_before_click else 0
                )
                progress["masked"]["look_before_click"] += int(np.sum(looked))
                progress["masked"]["other"] = (
                    progress["decisions_seen"]
                    - progress["decisions_trained"]
                    - progress["masked"]["burst"]
                    - progress["masked"]["look_before_click"]
                )
                now = time.monotonic()
                progress["train_seconds"] += now - tick  # the wait for data included
                tick = now
                position = where
                progress["position"] = where.to_dict()
                epoch_tally.add(out_, tokens, mask)
                epoch_tally.add_objectives(extra_losses)
                step = progress["step"]
                window_decisions += int(a["region"].sum())
                scalars = {
                    "train/loss": loss.item(),
                    "train/lr": optimizer.param_groups[0]["lr"],
                    "train/grad_norm": grad_norm,
                    **{f"train/objective_{name}": value.item() for name, (value, _) in extra_losses.items()},
                }
                if now - window_start >= 10.0:
                    scalars["train/decisions_per_s"] = window_decisions / (now - window_start)
                    window_start, window_decisions = now, 0
                if step % 10 == 0:
                    for name, value in epoch_tally.summary()["loss_by_kind"].items():
                        scalars[f"train/loss_{name}"] = value
                run.log(
                    step,
                    scalars,
                    task=task,
                    advance=1,
                    description=f"epoch {epoch + 1}/{config.epochs} loss {loss.item():.3f}",
                )

                if run.save_due(config.save_every):
                    run.save_progress()
                stop = over_budget()
                if stop:
                    break
            if stop:
                break

            # --- end of epoch: held-out metrics, checkpoints ---
            held_out = (
                evaluate(policy, loader, data.val, val_refs, config, device, intents, objectives)
                if val_refs
                else None
            )
            train_summary = epoch_tally.summary()
            epoch_tally = Tally()
            progress["epochs_completed"] = epoch + 1
            progress["history"].append(
                {"epoch": epoch + 1, "step": progress["step"], "train": train_summary, "held_out": held_out}
            )
            progress["skipped"] = sorted({s.path for s in loader.skipped} | set(progress["skipped"]))
            held = held_out or {}
            run.log(
                progress["step"],
                {
                    **{f"held_out/{k}": v for k, v in held.items() if isinstance(v, int | float)},
                    **{f"held_out/loss_{k}": v for k, v in (held.get("loss_by_kind") or {}).items()},
                    **{f"held_out/objective_{k}": v for k, v in (held.get("objectives") or {}).items()},
                },
                task=task,
                description=f"epoch {epoch + 1}/{config.epochs} held-out loss "
                + (f"{held_out['loss']:.3f}" if held_out and held_out["loss"] is not None else "-"),
            )
            position = DataPosition(epoch + 1, tuple(0 for _ in position.starts))
            progress["position"] = position.to_dict()
            run.checkpoint(f"epoch-{epoch + 1:04d}.pt")
        stop = stop or "epochs"
        if stop != "epochs" or not (out / LAST).exists():
            progress["skipped"] = sorted({s.path for s in loader.skipped} | set(progress["skipped"]))
        run.final_save(stop != "epochs")

    if stop != "epochs" and epoch_tally.decisions:
        train_now = epoch_tally.summary()
    else:
        train_now = progress["history"][-1]["train"] if progress["history"] else None
    seconds = progress["train_seconds"]
    described = {"objectives": objectives.describe()} if objectives is not None else {}
    return run.finish(
        {
            **described,
            "stopped": stop,
            "steps": progress["step"],
            "epochs_completed": progress["epochs_completed"],
            "decisions_seen": progress["decisions_seen"],
            "decisions_trained": progress["decisions_trained"],
            "masked": progress["masked"],
            "decisions_per_s": progress["decisions_seen"] / seconds if seconds else None,
            "train": train_now,
            "held_out": held_out,
            "checkpoint": str(out / LAST),
            "weights_sha256": weights_sha256(policy.state_dict()),
            "progress": str(out / PROGRESS),
            "config": str(out / CONFIG),
            "sessions": {"train": len(data.train), "val": len(data.val), "skipped": data.skipped},
            "skipped_while_training": progress["skipped"],
            "advantage": advantage.stats if advantage is not None else None,
            "intents": intents.stats if intents is not None else None,
            "parameters": policy.parameter_count()["total"],
            "device": str(device),
            "threads": torch.get_num_threads(),
            "seconds": run.seconds,
        }
    )
