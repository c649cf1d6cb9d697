"""The critic: P(the recorded side wins) from pixels, the policy's encoder and memory with its value head.

`train_critic(config)` reads top to bottom: the games (training/value_data.py: each session's outcome
for its recorded side, win 1, draw 0.5, loss 0; sessions whose ARENA log or manifest cannot say who won
are skipped, and a folder with none is refused), the model (a fresh `Policy`, or the policy checkpoint
itself with `--init`), then the loop over the data loader's windows exactly as train-bc reads them
(views stored at capture time or decoded, `window` decisions scored from a fresh memory after `lead_in`
decisions of context, the demonstrated tokens as the memory's previous action), the loss

    loss = sum over the window's real decisions of BCE(value logit, outcome) / number of them

and AdamW. Every decision of a game has the same target: the game's outcome. `--trained value` trains the
value head alone and leaves the rest of an `--init` policy as it is (the checkpoint still plays as that
policy). After each epoch the held-out games are scored (value_report.py: accuracy and Brier by game
day, the same report as the state-value baseline's) and OUT/critic.pt is written: a policy checkpoint
(models/checkpoint.py) whose `extra["critic"]` holds the config, the split and the report; `advantage
--critic` refuses a policy checkpoint without it (its value head was never trained).

`critic_values` is the one pass that gives every decision of some sessions its value (the loader's
windows in order, memory fresh per window as in training): the held-out report and advantage.py use it.

The run's folder, config.json, saves and report are `TrainingRun`'s (training/run_control.py); Ctrl+C
stops after the current step, then scores and saves that epoch. Known limit: no --resume (a run is a few
epochs); OUT must not hold a critic already.

Try: hoi4-arena train-critic runs/critic-data runs/critic --epochs 2
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.shuffle import WindowRef
from hoi4_arena.data.sources import SessionSource
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import (
    Provenance,
    load_checkpoint,
    read_torch_file,
    save_checkpoint,
    weights_sha256,
)
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Observation, Policy, PolicyState
from hoi4_arena.training.run_control import TrainingRun, adam
from hoi4_arena.training.value_config import CriticConfig
from hoi4_arena.training.value_data import ValueData, value_games
from hoi4_arena.training.value_report import by_day_table, report

log = logging.getLogger(__name__)

CHECKPOINT = "critic.pt"
REPORT = "report.json"


def critic_policy(config: CriticConfig) -> Policy:
    """The model to train: the --init checkpoint's policy (its encoder and layout; options that name
    another are refused), or a fresh one."""
    if config.init is not None:
        checkpoint = load_checkpoint(config.init)
        checkpoint.refuse_intents(config.init, "train-critic")
        theirs = checkpoint.config
        differ = [
            f"{name} {getattr(theirs, name)!r} (asked for {asked!r})"
            for name, asked in (("encoder", config.encoder), ("layout", config.layout))
            if asked is not None and asked != getattr(theirs, name)
        ]
        if differ:
            raise UserError(
                f"--init {config.init} is another architecture: {', '.join(differ)}; leave out --encoder and "
                "--layout to use the checkpoint's, or give a checkpoint of that encoder and layout"
            )
        return checkpoint.policy
    try:
        policy_config = PolicyConfig(
            layout=config.layout or "cpu",
            encoder=config.encoder or "cnn",
            weights=config.weights,
            seed=config.seed,
            **config.policy,
        )
    except TypeError as error:
        raise UserError(f"--policy: {error}") from None
    except ValueError as error:
        raise UserError(str(error)) from None
    return Policy(policy_config)


def data_settings(
    policy: Policy, *, window: int, lead_in: int, batch: int, hold_gb: float, seed: int
) -> DataSettings:
    """The loader's settings for a critic of `policy` (its layout; the clip when it reads one)."""
    policy_config = policy.config
    return DataSettings(
        decode=DecodeSettings(policy_config.layout),
        window=window,
        lead_in=lead_in,
        batch=batch,
        clip=policy_config.sizes.clip if policy_config.reads_clip else 1,
        hold_gb=hold_gb,
        seed=seed,
    )


def _inputs(arrays: dict[str, np.ndarray], policy: Policy, device: torch.device) -> tuple:
    """A batch as (observation (B, T), tokens (B, T, 8, 3), region mask (B, T) float, state, the tokens
    sent (B, T, 8, 3): what the memory is fed as each previous action)."""
    a = {k: torch.from_numpy(v).to(device) for k, v in arrays.items()}
    held = a["held"] if policy.config.held_inputs else None
    obs = Observation(a["global_view"], a["quadrants"], a["fovea"], a["speed"], a["pointer"], held=held)
    state = policy.initial_state(len(a["tokens"]), device)
    return obs, a["tokens"], a["region"].float(), PolicyState(state.hidden, a["previous"]), a["fed"]


def _targets(
    keys: list[tuple[str, int]], outcomes: dict[str, float], steps: int, device: torch.device
) -> torch.Tensor:
    return torch.tensor([outcomes[sid] for sid, _ in keys], dtype=torch.float32, device=device)[
        :, None
    ].expand(-1, steps)


@torch.no_grad()
def critic_values(
    policy: Policy, loader: WindowLoader, sessions: list[SessionSource], device: torch.device
) -> dict[str, np.ndarray]:
    """P(win) at every decision of `sessions` (by session id), from the loader's windows in order."""
    was_training = policy.training
    policy.eval()
    settings = loader.settings
    spans = {s.id: settings.spans(s) for s in sessions}
    values = {s.id: np.full(s.decisions, np.nan) for s in sessions}
    refs = [WindowRef(i, span) for i, s in enumerate(sessions) for span in range(len(spans[s.id]))]
    for batch in loader.ordered(sessions, refs):
        obs, tokens, region, state, fed = _inputs(batch.arrays, policy, device)
        value = policy(obs, tokens, state, chunk=None, fed=fed).value.cpu().numpy()
        for row, (sid, span) in enumerate(batch.keys):
            start = spans[sid][span].start
            for t in np.flatnonzero(batch.arrays["region"][row]):
                values[sid][start + t] = value[row, t]
    policy.train(was_training)
    missing = [sid for sid, v in values.items() if np.isnan(v).any()]
    if missing:
        raise UserError(f"sessions {', '.join(missing[:3])} could not be read to the end (see the warnings)")
    return values


def held_out_report(
    policy: Policy, loader: WindowLoader, data: ValueData, base: float, device: torch.device
) -> dict[str, Any]:
    values = critic_values(policy, loader, [g.source for g in data.val], device)
    return report(
        [values[g.id] for g in data.val], [g.days for g in data.val], [g.outcome for g in data.val], base
    )


def train_critic(config: CriticConfig) -> dict[str, Any]:
    """Train a critic on DATA's games and report on the held-out ones (see the module docstring)."""
    out = Path(config.out)
    run = TrainingRun(out, "train-critic", (CHECKPOINT,), None, resume=False)
    device = run.use(config.threads, config.device)

    # --- model, then data (the layout comes from the model) ---
    policy = critic_policy(config).to(device)
    layout = policy.config.layout
    data = value_games(config.data, config.sources, layout, config.val_share, config.seed)
    outcomes = {g.id: g.outcome for g in data.train + data.val}
    base = float(np.mean([g.outcome for g in data.train]))
    settings = data_settings(
        policy,
        window=config.window,
        lead_in=config.lead_in,
        batch=config.batch,
        hold_gb=config.hold_gb,
        seed=config.seed,
    )
    train_set = [g.source for g in data.train]

    if config.trained == "value":
        for name, parameter in policy.named_parameters():
            parameter.requires_grad_(name.startswith("value."))
    policy.train()
    trained = [p for p in policy.parameters() if p.requires_grad]
    optimizer = adam(trained, config.lr, config.weight_decay)
    provenance = Provenance(data={**data.describe(), "init": config.init}, seed=config.seed)
    step, history, stopped = 0, [], "epochs"

    def save(path: Path, full: bool) -> Path:
        extra = {"critic": {"config": config.to_dict(), "data": data.describe(), "history": history}}
        return save_checkpoint(path, policy, provenance=provenance, extra=extra)

    run.start({"critic": config.to_dict(), "policy": policy.config.to_dict()}, write=save, tensorboard=False)

    # --- the loop ---
    held_out: dict[str, Any] | None = None
    with WindowLoader(settings, config.workers) as loader, run.loop() as bar:
        if config.hold_gb:
            everything = train_set + [g.source for g in data.val]
            task = bar.add_task(
                "reading the data into memory", total=sum(len(settings.spans(s)) for s in everything)
            )
            loader.hold(everything, on_batch=lambda count: bar.update(task, advance=count))
        for epoch in range(config.epochs):
            task = bar.add_task(
                f"epoch {epoch + 1}/{config.epochs}", total=loader.batches_in_epoch(train_set, epoch)
            )
            total, count = 0.0, 0
            for batch, _ in loader.epoch(train_set, epoch):
                obs, tokens, region, state, fed = _inputs(batch.arrays, policy, device)
                out_ = policy(obs, tokens, state, chunk=config.chunk or None, fed=fed)
                target = _targets(batch.keys, outcomes, tokens.shape[1], device)
                bce = nn.functional.binary_cross_entropy_with_logits(
                    out_.value_logit, target, reduction="none"
                )
                counted = region.sum()
                loss = (bce * region).sum() / counted.clamp(min=1)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if config.grad_clip:
                    torch.nn.utils.clip_grad_norm_(trained, config.grad_clip)
                optimizer.step()
                step += 1
                total += float(loss.detach()) * float(counted)
                count += int(counted)
                bar.update(
                    task, advance=1, description=f"epoch {epoch + 1}/{config.epochs} bce {loss.item():.3f}"
                )
                if config.max_steps and step >= config.max_steps:
                    stopped = "max_steps"
                if run.stop:  # Ctrl+C: this epoch's report and checkpoint, then the end
                    stopped = run.stop
                if stopped != "epochs":
                    break
            held_out = held_out_report(policy, loader, data, base, device)
            history.append(
                {"epoch": epoch + 1, "step": step, "train_bce": total / max(count, 1), "held_out": held_out}
            )
            log.info("epoch %d held-out by day:\n%s", epoch + 1, by_day_table(held_out))
            run.save(CHECKPOINT)
            if stopped != "epochs":
                break

    result = {
        "model": "critic",
        "stopped": stopped,
        "steps": step,
        "epochs_completed": len(history),
        "checkpoint": str(out / CHECKPOINT),
        "report": str(out / REPORT),
        "held_out": held_out,
        "history": [{k: v for k, v in h.items() if k != "held_out"} for h in history],
        "base_rate": base,
        "games": {"train": len(data.train), "val": len(data.val), "held_out_by": data.held_out_by},
        "skipped": data.skipped,
        "weights_sha256": weights_sha256(policy.state_dict()),
        "parameters": {
            "total": policy.parameter_count()["total"],
            "trained": sum(p.numel() for p in trained),
        },
        "config": config.to_dict(),
        "device": str(device),
        "threads": torch.get_num_threads(),
        "seconds": run.seconds,
    }
    run.finish(result, report=REPORT, indent=1)
    result["table"] = by_day_table(held_out) if held_out else None
    return result


def load_critic(path: str | Path, device: torch.device) -> Any:
    """A train-critic checkpoint (a policy checkpoint with `extra["critic"]`), else a UserError."""
    path = Path(path)
    try:
        head = read_torch_file(path, "a critic checkpoint")
    except UserError:  # load_checkpoint says what is wrong with the file
        head = None
    if isinstance(head, dict) and head.get("format") == "hoi4-arena-state-value":
        raise UserError(f"{path} is a state-value checkpoint: give it with --state-value")
    checkpoint = load_checkpoint(path, device=device)
    if "critic" not in checkpoint.extra:
        raise UserError(
            f"{path} is a policy checkpoint whose value head was never trained (no critic record); "
            f"train one first: hoi4-arena train-critic DATA OUT --init {path}"
        )
    return checkpoint
