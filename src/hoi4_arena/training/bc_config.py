"""The settings of a behaviour-cloning run: one typed dataclass, saved beside every output and inside every
checkpoint, and the source of `hoi4-arena train-bc`'s options (each field's default and one-line docstring,
through `cli_options.from_config`).

This module imports neither torch nor numpy, so the command line can build its options cheaply.

Try: hoi4-arena train-bc --help
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from hoi4_arena.errors import UserError

# The auxiliary objectives' kinds (training/objectives.py; named here so the CLI needs no torch), and
# which setting belongs to which: one given without its objective is refused rather than ignored.
AUXILIARY = ("dense", "sparse")
OBJECTIVES = ("bc", "xm")
XM_FORMS = ("dot", "cosine")
OBJECTIVE_SETTINGS = {
    "auxiliary_weight": ("--auxiliary dense or sparse", ("dense", "sparse")),
    "projections": ("--auxiliary dense", ("dense",)),
    "sparsity_shift": ("--auxiliary sparse", ("sparse",)),
    "xm_weight": ("--objective xm", ("xm",)),
    "xm_candidates": ("--objective xm", ("xm",)),
    "xm_form": ("--objective xm", ("xm",)),
    "xm_latents": ("--objective xm", ("xm",)),
}

# Fields a resumed run may change: they bound or pace the run, not what it computes (threads and
# device may change the last bits of the arithmetic; the same ones reproduce a run exactly).
RESUMABLE_CHANGES = ("epochs", "max_minutes", "max_steps", "save_every", "threads", "device", "hold_gb")


@dataclass(frozen=True)
class BCConfig:
    """Behaviour cloning from recorded sessions (see docs/training.md)."""

    data: str
    """Data folder: session folders anywhere below it (and an optional splits.json)."""
    out: str
    """Output folder: checkpoints, progress.pt, config.json, TensorBoard logs (tb/)."""
    encoder: str = "cnn"
    """Encoder: cnn, cnn_clip or timm:NAME (e.g. timm:qwen3_vit_88m_enc)."""
    weights: str | None = None
    """A .safetensors file of the timm tower's pretrained weights."""
    layout: str = "cpu"
    """View layout: cpu (small, trains on a CPU) or full."""
    init: str | None = None
    """A checkpoint of the same architecture whose weights the run starts from (a fresh optimizer)."""
    freeze_blocks: int = 0
    """Leading encoder blocks kept frozen (computed once per frame without a graph)."""
    policy: dict[str, int | str] = field(default_factory=dict)
    """Other PolicyConfig widths, e.g. {"width": 8, "hidden": 64} (--policy width=8)."""
    window: int = 16
    """Decisions with loss per training window."""
    lead_in: int = 0
    """Decisions fed through the memory before each window, without loss (warm-up context)."""
    batch: int = 8
    """Windows per optimizer step."""
    workers: int = 2
    """Background processes that decode videos and compute views (0: on the training thread)."""
    epochs: int = 10
    """Passes over the training sessions."""
    max_minutes: float = 0.0
    """Stop cleanly after this many minutes of wall time, saving everything (0: no limit)."""
    max_steps: int = 0
    """Stop cleanly after this many optimizer steps in total (0: no limit)."""
    lr: float = 3e-4
    """AdamW learning rate (constant, or the start of --lr-decay-minutes)."""
    lr_decay_minutes: float = 0.0
    """Cosine-decay the learning rate to 0 over this many minutes of training, counted across resumes
    (0: constant). Give it the run's planned length, e.g. its --max-minutes."""
    lr_decay_steps: int = 0
    """Cosine-decay the learning rate to 0 over this many optimizer steps (0: constant). Give it the run's
    --max-steps: unlike --lr-decay-minutes the schedule, and so the weights, do not depend on the machine."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Clip the gradient's global norm to this (0: no clipping)."""
    seed: int = 0
    """Seed of the weight initialisation and of the data order."""
    pointer_sigma: float = 0.0
    """Score a move against a Gaussian blob this many lattice units wide (0: the exact point)."""
    aim_weight: float = 1.0
    """Weight of the pointer terms of aim moves (the last move before a mouse button token: where a click
    or a drag's end lands) in the training loss; the path's other moves keep weight 1."""
    begin_weight: float = 1.0
    """Weight in the training loss of the decisions that begin acting: whose target sends an input after a
    decision that sent none (the first decision of a step, such as a replan's first key, and of a step's
    part after a pause); the other decisions keep weight 1."""
    look_before_click: bool = False
    """Leave out decisions that press a button after a move in the same decision."""
    chunk: int = 4
    """Frames per recomputed chunk of the trained encoder blocks and readers (0: keep all activations)."""
    save_every: float = 600.0
    """Seconds between progress.pt saves within an epoch (also saved after each epoch)."""
    threads: int = 0
    """Torch CPU threads (0: torch's default)."""
    device: str = "auto"
    """cpu, cuda, cuda:N, or auto (cuda when available)."""
    sources: tuple[str, ...] = ("human", "scripted")
    """Manifest sources used as demonstrations: human, scripted, ai, policy; idm: sessions an IDM labelled;
    expert: sessions the scripted player labelled (hoi4-arena dagger)."""
    expert_labels: str = "all"
    """--sources expert: which decisions of a labelled game carry loss: all (the expert's label of every
    screen) or played (only those the expert played; the learner's feed the memory unscored)."""
    drop_keys: tuple[int, ...] = ()
    """Virtual-key codes whose tokens are removed from the demonstrations (e.g. 0x20)."""
    timing: str = "recorded"
    """recorded: each token in the 25-ms slot its event fell in; in_order: each decision's tokens moved to
    its first slots, in their order (the policy then learns to act at a decision's start)."""
    rung: str | None = None
    """Learn only what follows a rung's moment in each game (make-ladder's S1 the war declared, S2 the
    side's first army, S3 its army on the front), read from the session's ARENA log; a session that
    never reaches it is skipped."""
    open_sessions: int = 4
    """Sessions each data stream plays at once."""
    shuffle_windows: int = 64
    """Windows in each data stream's shuffle buffer."""
    val_windows: int = 256
    """Held-out windows scored after each epoch, a fixed seeded sample (0: all)."""
    idle_windows: float = 1.0
    """Share of the training windows without any input that each epoch plays, a seeded draw (1: all)."""
    hold_gb: float = 4.0
    """Hold the decoded data in memory when it fits in this many GiB, compressed (about 40x smaller, each
    batch decompressed) when only that fits: later epochs read memory and give the same batches (0: read
    the sessions every epoch)."""
    advantage: bool = False
    """Advantage-weighted cloning: each decision's loss times exp(A / beta), clipped at --max-weight, A read
    from each training session's advantages.json (written by hoi4-arena advantage)."""
    beta: float = 0.1
    """--advantage's temperature: a decision weighs exp(A / beta) (A is a change in win probability)."""
    max_weight: float = 20.0
    """--advantage's clip: no decision weighs more than this."""
    idm_min_logp: float | None = None
    """--sources idm: leave out labelled decisions with a token less likely than this (log-likelihood)."""
    idm_weight: float = 1.0
    """--sources idm: the loss weight of a labelled decision (a recorded one weighs 1)."""
    skills: bool = False
    """Condition the policy on the scripted player's intents: each decision's intent (hoi4-arena intents)
    is an input; the checkpoint then plays only where something gives it an intent (scripted sessions)."""
    auxiliary: str | None = None
    """A training-only auxiliary loss from the memory (training/objectives.py): none, dense (the next
    decision's encoder summary through --projections fixed random projections, cosine loss) or sparse (the
    ARENA facts where the game's state changes, --sparsity-shift decisions ahead)."""
    auxiliary_weight: float = 1.0
    """--auxiliary's loss weight beside the BC loss."""
    projections: int = 32
    """--auxiliary dense: rows of the fixed seeded random projection of the next summary (the target's size)."""
    sparsity_shift: int = 5
    """--auxiliary sparse: predict a change this many decisions before the decision that shows it (0: at it)."""
    objective: str = "bc"
    """bc, or xm: beside the BC loss a contrastive next-latent loss (InfoNCE over --xm-candidates decisions
    of the batch; this project's reading of the option names, see training/objectives.py)."""
    xm_weight: float = 1.0
    """--objective xm: the contrastive loss's weight beside the BC loss."""
    xm_candidates: int = 16
    """--objective xm: candidates scored per decision, the true next latent and N-1 others of the batch."""
    xm_form: str = "cosine"
    """--objective xm: the score of a prediction and a candidate: dot, or cosine (over a temperature of 0.1)."""
    xm_latents: int = 64
    """--objective xm: width of the learned latent of the next decision's encoder summary."""

    def __post_init__(self) -> None:
        if self.rung is not None and self.rung not in ("S0", "S1", "S2", "S3"):
            raise UserError(f"--rung must be one of S0, S1, S2, S3, not {self.rung!r}")
        if self.auxiliary == "none":
            object.__setattr__(self, "auxiliary", None)
        if self.auxiliary is not None and self.auxiliary not in AUXILIARY:
            raise UserError(f"--auxiliary must be one of {', '.join(AUXILIARY)}, not {self.auxiliary!r}")
        if self.objective not in OBJECTIVES:
            raise UserError(f"--objective must be one of {', '.join(OBJECTIVES)}, not {self.objective!r}")
        if self.xm_form not in XM_FORMS:
            raise UserError(f"--xm-form must be one of {', '.join(XM_FORMS)}, not {self.xm_form!r}")
        if not isinstance(self.xm_candidates, int) or self.xm_candidates < 2:
            raise UserError(
                f"xm_candidates must be an integer >= 2 (the true latent and at least one other), "
                f"got {self.xm_candidates!r}"
            )
        chosen = {self.auxiliary, self.objective}
        defaults = {f.name: f.default for f in fields(self)}
        for name, (needs, kinds) in OBJECTIVE_SETTINGS.items():
            if getattr(self, name) != defaults[name] and not chosen & set(kinds):
                raise UserError(
                    f"--{name.replace('_', '-')} applies to {needs} only; give that too, or leave it out"
                )
        object.__setattr__(self, "sources", tuple(self.sources))
        object.__setattr__(self, "drop_keys", tuple(int(k) for k in self.drop_keys))
        object.__setattr__(self, "policy", dict(self.policy))
        positive = (
            "window",
            "batch",
            "epochs",
            "open_sessions",
            "shuffle_windows",
            "projections",
            "xm_latents",
        )
        for name in positive:
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise UserError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
        for name in (
            "lead_in",
            "workers",
            "max_steps",
            "chunk",
            "threads",
            "freeze_blocks",
            "val_windows",
            "lr_decay_steps",
            "sparsity_shift",
        ):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise UserError(f"{name} must be an integer >= 0, got {getattr(self, name)!r}")
        for name in (
            "max_minutes",
            "save_every",
            "pointer_sigma",
            "aim_weight",
            "begin_weight",
            "weight_decay",
            "grad_clip",
            "lr_decay_minutes",
            "auxiliary_weight",
            "xm_weight",
        ):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise UserError(f"{name} must be a finite number >= 0, got {value!r}")
        for name in ("beta", "max_weight", "idm_weight"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise UserError(f"{name} must be a finite number > 0, got {value!r}")
        if self.timing not in ("recorded", "in_order"):
            raise UserError(f"timing must be recorded or in_order, not {self.timing!r}")
        if self.expert_labels not in ("all", "played"):
            raise UserError(f"expert_labels must be all or played, not {self.expert_labels!r}")
        if self.idm_min_logp is not None and not (
            math.isfinite(self.idm_min_logp) and self.idm_min_logp <= 0
        ):
            raise UserError(f"idm_min_logp is a log-likelihood: a number <= 0, got {self.idm_min_logp!r}")
        if not (isinstance(self.hold_gb, int | float) and math.isfinite(self.hold_gb) and self.hold_gb >= 0):
            raise UserError(f"hold_gb must be a finite number >= 0, got {self.hold_gb!r}")
        if not (isinstance(self.idle_windows, int | float) and 0 <= self.idle_windows <= 1):
            raise UserError(f"idle_windows must lie in 0..1, got {self.idle_windows!r}")
        if self.lr_decay_steps and self.lr_decay_minutes:
            raise UserError("give --lr-decay-steps or --lr-decay-minutes, not both")
        if not (isinstance(self.lr, int | float) and math.isfinite(self.lr) and self.lr > 0):
            raise UserError(f"lr must be a positive number, got {self.lr!r}")
        if self.device != "auto" and self.device != "cpu" and not self.device.startswith("cuda"):
            raise UserError(f"device must be cpu, cuda, cuda:N or auto, got {self.device!r}")
        reserved = {"layout", "encoder", "weights", "freeze_blocks", "seed", "intents"}
        clash = sorted(reserved & set(self.policy))
        if clash:
            flag = "skills" if clash[0] == "intents" else clash[0].replace("_", "-")
            raise UserError(f"--policy cannot set {', '.join(clash)}: use --{flag}")
        self.policy_config  # noqa: B018 -- validates the architecture now, with its message

    @property
    def policy_config(self) -> Any:
        """The PolicyConfig this run trains (UserError when the combination is refused)."""
        from hoi4_arena.models.config import PolicyConfig

        intents = {}
        if self.skills:
            from hoi4_arena.players.intents import INTENTS

            intents = {"intents": len(INTENTS)}
        try:
            return PolicyConfig(
                layout=self.layout,
                encoder=self.encoder,
                weights=self.weights,
                freeze_blocks=self.freeze_blocks,
                seed=self.seed,
                **intents,
                **self.policy,
            )
        except TypeError as error:
            raise UserError(f"--policy: {error}") from None
        except ValueError as error:
            raise UserError(str(error)) from None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sources"] = list(self.sources)
        data["drop_keys"] = list(self.drop_keys)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BCConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"unknown train-bc settings: {', '.join(unknown)}")
        return cls(**data)

    def resumed_with(self, changes: dict[str, Any]) -> BCConfig:
        """This (stored) config with the settings a resumed run may change; UserError for any other."""
        refused = {k: v for k, v in changes.items() if k not in RESUMABLE_CHANGES and getattr(self, k) != v}
        if refused:
            listed = "; ".join(
                f"--{k.replace('_', '-')} {v!r} (the run has {getattr(self, k)!r})"
                for k, v in refused.items()
            )
            raise UserError(
                f"--resume continues with the run's own settings; these differ: {listed}. "
                f"Only {', '.join(RESUMABLE_CHANGES)} may change, or start a new run in another folder"
            )
        return replace(self, **{k: v for k, v in changes.items() if k in RESUMABLE_CHANGES})
