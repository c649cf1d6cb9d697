"""Recurrent PPO against the game's AI, itself or its league: `train_ppo(config)`, read top to bottom.

One update is one rollout and the learning on it:

1. Rollout (`rl/rollout.py`): `games` simulator games in lockstep, `steps` decisions each, the policy
   batched over them; per decision the views, the memory before it, the tokens, log p, the entropy of
   the distributions they were sampled from, the value, every reward term and done. Games run on across
   updates (a game is longer than a rollout).
2. Advantages (`rl/gae.py`): GAE over the weighted total reward (outcome + shaping; with
   `value_shaping` W also W (gamma V0(s') - V0(s)), V0 the frozen `critic_init` state value, 0 after a
   game's last decision: potential-based, so the best policy stays the best, Ng et al. 1999), lambda 1 by
   default, bootstrapped with the value of each game's next observation; with `clock` information
   (InfoPPO) each decision is discounted by gamma and gamma*lambda to the power of its stored entropy
   instead of once (with gamma 1 and lambda 1 nothing changes). The value head estimates the
   outcome alone (a win probability in [0, 1]), so its target is GAE's return over the outcome reward
   alone (with lambda 1: the game's outcome, or the bootstrapped value when it goes on), trained with
   binary cross-entropy. Advantages are normalised over the rollout's valid decisions.
3. Windows: each slot's decisions are cut at game starts and every `window` decisions; a window starts
   from the memory stored in the rollout before its first decision (truncated BPTT over the window).
4. `ppo_update`: for `epochs` passes, minibatches of `batch` windows in a seeded order:
   - actor: PPO's clipped surrogate on the ratio exp(log p - log p_old) (the exact log-likelihood of
     the 8 sampled tokens), clipped to [1 - clip, 1 + clip], or with `clip_mode` adaptive (InfoPPO) to
     each decision's `adaptive_clip_bounds` of its stored entropy; plus with `bc_kl` the k2 term
     0.5 (log p - log p_bc)^2 toward the frozen start policy (its gradient is the KL's on the policy's
     own samples), the start policy scoring each window from a fresh memory, as behaviour cloning
     trained it;
   - critic `pact` (the default): after the actor's step, the same windows are replayed through the
     updated policy and the value head alone is trained on them, each decision's BCE weighted by its
     new likelihood ratio clipped to [0, pact_max_ratio] (`pact_value_loss`); the memory the actor uses
     is not changed by the critic. `joint`: one loss, actor + value_coef * BCE, through everything.
     `state` (privileged, an asymmetric actor-critic as in Pinto et al. 2018): V(s) is a small net
     (`training.state_value.StateValueNet`) on the learner's side's ARENA facts at each decision (the
     features train-state-value learns from, read from the harness's log in the rollout game,
     `Step.state`), trained with BCE on the same windows' value targets by its own Adam; GAE's values
     and bootstrap are its; the actor and its pixel value head never see the facts. It starts from a
     train-state-value checkpoint (`critic_init`) or fresh, standardised by the first rollout's facts.
   - with `bc_kl_decay` D the KL weight of update u is bc_kl * D**u (`bc_kl_weight`);
   - with `replay` (imitation data: demonstrations, a DAgger run's labelled sessions) the actor's loss
     adds `replay_weight` times train-bc's loss on the next batch of `rl/replay.py`'s seeded stream
     (its position is in progress.pt: a resumed run reads the batches the uninterrupted one would).
5. Logs (TensorBoard in OUT/tb, the progress bar): returns, win rate, setup completion, each reward
   term, value loss, KL to the rollout policy and to the start policy, clip fraction, the entropy's
   sample estimate (mean -log p of the sampled actions) and the rollout's stored entropy, with the
   adaptive clip its mean bounds, decisions/s of collection and of learning.
6. Saves: OUT/last.pt and OUT/update-NNNN.pt (policy checkpoints that play-policy and evaluate load),
   OUT/progress.pt (with the optimizer and the engine's games under way) every `save_every` seconds and
   at the end; Ctrl+C stops after the current update and saves (a second one interrupts at once). The
   run's folder, config.json, TensorBoard, the progress bar and the saves are `TrainingRun`'s
   (training/run_control.py), the same skeleton as every trainer's. `resume=True` replays the games
   under way and continues exactly: a run resumed after update k gives the weights of the uninterrupted
   run (tests/rl/test_ppo.py).

Where the games run: `--workers` local processes (0: this one), their Ray actors (`--ray`), or one
station (`--peer NAME`, `cluster/peer_games.py`): its one game at a time, started there with new_game
and played through its worker from this process, with the numbers of the same run played here.

Opponents (`--opponent`): `ai`, the game's AI on the other side of every game; `self`, the learner's own
policy (as it is at each rollout) on the other side's screen of one world; `league`, a member drawn
game by game from `--league-mix`: the learner as it is (current), the newest or an older frozen snapshot
(`rl/league.py`, one every `--league-every` updates, the start the first), the scripted player, or the
game's AI. Only the learner's side of a game is in the batch; the logs add the learner's win rate
against each opponent (games/win_rate_vs_<member>). The league's snapshots are listed in progress.pt
(with their files' sha256) and resume with the run.

Not built (yet): an entropy bonus (the rollout's stored entropy is the collecting policy's, with no
gradient; training scores the sampled actions only).

Try: hoi4-arena train-ppo runs/ppo --init runs/bc/last.pt --updates 4 --games 4 --steps 32
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import Provenance, load_checkpoint, save_checkpoint, weights_sha256
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Observation, Policy, PolicyState
from hoi4_arena.play.rollout_game import RolloutSettings
from hoi4_arena.rl.gae import gae
from hoi4_arena.rl.league import League
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.rl.replay import Replay, bc_loss
from hoi4_arena.rl.rollout import VIEWS, Rollout, Rollouts, Schedule, rung_starts
from hoi4_arena.screen.rewards import OUTCOME, TERMS
from hoi4_arena.training.run_control import CONFIG, LAST, PROGRESS, TrainingRun, adam
from hoi4_arena.training.state_value import StateValueNet, load_state_value
from hoi4_arena.training.value_data import FEATURES

log = logging.getLogger(__name__)


def pact_value_loss(
    value_logit: torch.Tensor,
    target: torch.Tensor,
    new_logp: torch.Tensor,
    old_logp: torch.Tensor,
    mask: torch.Tensor,
    max_ratio: float = 6.0,
) -> torch.Tensor:
    """PACT's critic loss: each counted decision's BCE(value, target) times its likelihood ratio under the
    updated actor, exp(new_logp - old_logp) clipped to [0, max_ratio], summed over the counted decisions
    (`mask`) and divided by their number."""
    limit = math.log(max_ratio) if max_ratio > 0 else -math.inf
    weight = torch.exp((new_logp - old_logp).clamp(max=limit)).detach()
    bce = F.binary_cross_entropy_with_logits(value_logit, target, reduction="none")
    return (weight * bce * mask).sum() / mask.sum().clamp(min=1)


def adaptive_clip_bounds(
    entropy: torch.Tensor, low_width: float, high_width: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """InfoPPO's clip range of each decision's likelihood ratio, from the collecting policy's entropy h
    there (nats): [1 - low_width ln(1 + h), 1 + high_width ln(1 + h)], the lower width at most 0.95 so the
    bound stays at or above 0.05. A confident decision (h near 0) barely moves."""
    grow = torch.log1p(entropy)
    return 1 - (low_width * grow).clamp(max=0.95), 1 + high_width * grow


def windows_of(fresh: np.ndarray, window: int) -> list[tuple[int, int, int]]:
    """(slot, start, length) of every training window: each slot's decisions (T, N) cut where the memory
    starts afresh (`fresh`: a game's start, a reset) and every `window` decisions."""
    steps, slots = fresh.shape
    out = []
    for n in range(slots):
        start = 0
        for t in range(1, steps + 1):
            if t == steps or fresh[t, n] or t - start == window:
                out.append((n, start, t - start))
                start = t
    return out


def start_timing(init: str) -> str:
    """The slot timing the start policy was cloned with (`train-bc --timing`; recorded for a random start
    or a checkpoint from before the option), which --replay's batches follow."""
    if init == "random":
        return "recorded"
    return str(load_checkpoint(init).extra.get("train_config", {}).get("timing", "recorded"))


def _start_policy(config: PPOConfig) -> tuple[Policy, dict[str, Any]]:
    """The policy the run starts from and what identifies it; UserError for a start it cannot train."""
    from hoi4_arena.screen.layout import ViewLayout

    if config.init == "random":
        try:
            policy = Policy(PolicyConfig(layout=config.layout, seed=config.seed, **config.policy))
        except TypeError as error:
            raise UserError(f"--policy: {error}") from None
        except ValueError as error:
            raise UserError(str(error)) from None
        identity = {"init": "random"}
    else:
        if not Path(config.init).is_file():
            raise UserError(f"--init {config.init}: no such checkpoint file (give a checkpoint, or random)")
        checkpoint = load_checkpoint(config.init, layout=config.layout)  # another layout: refused here
        checkpoint.refuse_intents(config.init, "train-ppo")  # its rollouts choose no intents
        if config.policy:
            raise UserError("--policy sets a random start's widths; a checkpoint brings its own")
        policy = checkpoint.policy
        identity = {"init": config.init, "init_weights_sha256": weights_sha256(policy.state_dict())}
    if policy.config.reads_clip:
        raise UserError(
            f"train-ppo does not yet play clip encoders ({policy.config.encoder}): start from a cnn policy"
        )
    try:
        ViewLayout.named(policy.config.layout).check_screen(config.size)
    except ValueError as error:
        raise UserError(
            f"the policy's layout cannot read a {config.size[1]}x{config.size[0]} game: {error}"
        ) from None
    return policy, identity


def _batch(
    rollout: Rollout, picked: list[tuple[int, int, int]], window: int
) -> tuple[Observation, torch.Tensor, PolicyState, np.ndarray, np.ndarray, torch.Tensor]:
    """Minibatch of windows: obs (B, W), tokens (B, W, 8, 3), the stored start state, the (B, W) index
    arrays into the rollout, and the mask of real (not padding) decisions."""
    offsets = np.arange(window)
    tt = np.stack([start + np.minimum(offsets, length - 1) for _, start, length in picked])  # (B, W)
    nn = np.stack([np.full(window, n) for n, _, _ in picked])
    real = torch.from_numpy(np.stack([offsets < length for _, _, length in picked]))
    obs = Observation(
        *(torch.from_numpy(rollout.views[k][tt, nn]) for k, _ in VIEWS),
        torch.from_numpy(rollout.speed[tt, nn]),
        torch.from_numpy(rollout.pointer[tt, nn]),
        held=None if rollout.held is None else torch.from_numpy(rollout.held[tt, nn]),
    )
    t0 = torch.as_tensor(tt[:, 0])
    n0 = torch.as_tensor(nn[:, 0])
    state = PolicyState(rollout.hidden[t0, n0], rollout.previous[t0, n0])
    return obs, rollout.tokens[tt, nn], state, tt, nn, real


def bc_kl_weight(config: PPOConfig, update: int) -> float:
    """The --bc-kl weight of update `update` (from 0): W * D**update, or W itself without a decay."""
    return config.bc_kl if config.bc_kl_decay == 1.0 else config.bc_kl * config.bc_kl_decay**update


def state_values(net: torch.nn.Module, facts: np.ndarray) -> torch.Tensor:
    """The privileged V(s) = P(the learner's side wins) of ARENA facts (..., F) -> (...), no gradient."""
    with torch.no_grad():
        return torch.sigmoid(net(torch.from_numpy(facts)))


def value_shaping(rollout: Rollout, config: PPOConfig, potential: torch.nn.Module) -> torch.Tensor:
    """(T, N) potential-based shaping gamma V0(s') - V0(s) of each decision (before --value-shaping's
    weight), V0 the frozen `potential`: s' is the next decision's state, or the rollout's last facts; a
    game's last decision has V0(s') 0 (its next observation is another game's). With the information
    clock gamma is raised to the decision's entropy, as GAE discounts it."""
    phi = state_values(potential, rollout.facts)
    following = torch.cat([phi[1:], state_values(potential, rollout.last_facts)[None]])
    following = following * (1 - torch.from_numpy(rollout.done).float())
    discount = torch.full_like(phi, config.gamma)
    if config.clock == "information":
        discount = discount ** rollout.entropy.float()
    return discount * following - phi


def _state_critic(
    config: PPOConfig,
) -> tuple[StateValueNet | None, StateValueNet | None, dict[str, str]]:
    """--critic state's critic (from --critic-init, or fresh and seeded), --value-shaping's frozen
    potential, and what identifies the initialising checkpoint; UserError for a file that is no state
    value of this code's features."""
    start = load_state_value(config.critic_init) if config.critic_init is not None else None
    critic = potential = None
    if config.critic == "state":
        if start is not None:
            critic = copy.deepcopy(start.net)
        else:
            with torch.random.fork_rng(devices=[]):  # the run's other draws stay as they were
                torch.manual_seed(config.seed)
                critic = StateValueNet(len(FEATURES), config.critic_hidden)
        critic.train()
    if config.value_shaping:
        potential = copy.deepcopy(start.net).eval()
        potential.requires_grad_(False)
    identity = {} if start is None else {"critic_init_weights_sha256": start.weights_sha256}
    return critic, potential, identity


def _standardise(critic: StateValueNet, rollout: Rollout) -> None:
    """A fresh critic's input statistics: the mean and spread of the first rollout's valid decisions."""
    facts = torch.from_numpy(rollout.facts[rollout.valid] if rollout.valid.any() else rollout.facts[0])
    critic.mean.copy_(facts.mean(0))
    spread = facts.std(0, unbiased=False)
    critic.scale.copy_(torch.where(spread > 1e-6, spread, torch.ones_like(spread)))


def advantages_of(
    rollout: Rollout,
    config: PPOConfig,
    critic: torch.nn.Module | None = None,
    potential: torch.nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE's advantages of the weighted total reward (normalised over the valid decisions) and the value's
    targets, GAE's returns over the outcome alone clamped to [0, 1]; both (T, N). The values are the
    policy's (stored in the rollout) or, with `critic` (--critic state), the critic's of the rollout's
    ARENA facts; with `potential` the reward adds --value-shaping's term."""
    valid = torch.from_numpy(rollout.valid)
    done = torch.from_numpy(rollout.done)
    reward = torch.from_numpy(rollout.reward).float()
    if potential is not None:
        reward = reward + config.value_shaping * value_shaping(rollout, config, potential)
    outcome = torch.from_numpy(rollout.terms[OUTCOME]).float()
    # How long each decision takes on the discount's clock: one tick (None), or with InfoPPO's
    # information clock the collecting policy's entropy there, in nats.
    elapsed = rollout.entropy if config.clock == "information" else None
    value, last_value = rollout.value, rollout.last_value
    if critic is not None:
        value, last_value = state_values(critic, rollout.facts), state_values(critic, rollout.last_facts)
    shared = (value, done, last_value)
    discount = {"gamma": config.gamma, "lam": config.lam, "exponents": elapsed}
    advantages, _ = gae(reward, *shared, **discount)  # the shaped reward steers the actor
    _, value_target = gae(outcome, *shared, **discount)  # the value learns the outcome alone
    value_target = value_target.clamp(0, 1)
    counted = advantages[valid]
    if counted.numel() > 1:
        advantages = (advantages - counted.mean()) / (counted.std() + 1e-8)
    return advantages, value_target


def ppo_update(
    policy: Policy,
    reference: Policy | None,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    advantages: torch.Tensor,
    value_target: torch.Tensor,
    config: PPOConfig,
    update: int,
    critic: torch.nn.Module | None = None,
    critic_optimizer: torch.optim.Optimizer | None = None,
    replay: Replay | None = None,
) -> tuple[dict[str, float], int]:
    """One update's learning on its rollout: `epochs` passes over the rollout's windows in minibatches of
    `batch` in an order seeded by the seed, the update and the pass; per minibatch the actor's clipped
    surrogate (with --bc-kl the pull toward `reference`, with --critic joint the value in the same loss)
    and, with --critic pact, the value head's step on the replayed windows, or with `critic` (--critic
    state) that net's step on the same decisions' ARENA facts; with `replay` (--replay) the actor's loss
    adds --replay-weight times train-bc's loss on the stream's next batch. Returns the sums of what the steps did
    (over the counted decisions, "decisions" their number) and the optimizer steps taken."""
    trained = [p for p in policy.parameters() if p.requires_grad]
    kl_weight = bc_kl_weight(config, update)
    valid = torch.from_numpy(rollout.valid)
    windows = windows_of(rollout.fresh, config.window)
    sums: dict[str, float] = {}
    steps_taken = 0
    for epoch in range(config.epochs):
        order = torch.randperm(
            len(windows),
            generator=torch.Generator().manual_seed(config.seed * 1_000_003 + update * 101 + epoch),
        ).tolist()
        for i in range(0, len(order), config.batch):
            picked = [windows[j] for j in order[i : i + config.batch]]
            obs, tokens, state, tt, nn, real = _batch(rollout, picked, config.window)
            mask = (real & valid[tt, nn]).float()
            if mask.sum() == 0:
                continue
            count = mask.sum()
            old_logp, adv, target = rollout.logp[tt, nn], advantages[tt, nn], value_target[tt, nn]

            # actor (and, with --critic joint, the value in the same loss)
            result = policy(obs, tokens, state, chunk=config.chunk or None)
            log_ratio = (result.logp - old_logp).clamp(-20, 20)
            ratio = log_ratio.exp()
            if config.clip_mode == "adaptive":
                low, high = adaptive_clip_bounds(rollout.entropy[tt, nn], *config.info_clip_widths)
                clipped = (ratio.detach() < low) | (ratio.detach() > high)
            else:
                low, high = 1 - config.clip, 1 + config.clip
                clipped = (ratio.detach() - 1).abs() > config.clip
            surrogate = torch.max(-adv * ratio, -adv * ratio.clamp(low, high))
            loss = (surrogate * mask).sum() / count
            if reference is not None:
                with torch.no_grad():
                    fresh = PolicyState(reference.initial_state(len(picked)).hidden, state.previous)
                    ref_logp = reference(obs, tokens, fresh, chunk=None).logp
                diff = result.logp - ref_logp
                loss = loss + kl_weight * (0.5 * diff.pow(2) * mask).sum() / count
                sums["kl_bc"] = sums.get("kl_bc", 0.0) + float((diff.detach() * mask).sum())
            if replay is not None:  # --replay: behaviour cloning on the imitation data beside PPO
                nll = bc_loss(policy, replay.next(), config.chunk or None)
                loss = loss + config.replay_weight * nll
                sums["replay_nll"] = sums.get("replay_nll", 0.0) + float(nll.detach()) * float(count)
            bce = F.binary_cross_entropy_with_logits(result.value_logit, target, reduction="none")
            value_loss = (bce * mask).sum() / count
            if config.critic == "joint":
                loss = loss + config.value_coef * value_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip:
                torch.nn.utils.clip_grad_norm_(trained, config.grad_clip)
            optimizer.step()

            # critic (PACT): the replayed windows through the updated actor, the value head alone
            if config.critic == "pact":
                seen: list[torch.Tensor] = []
                # The memory's states (B, W, H) are the value head's input: taken with a hook, so
                # the critic's step sees exactly what forward computed, without a second code path.
                hook = policy.value.register_forward_hook(
                    lambda _m, args, _o, seen=seen: seen.append(args[0])
                )
                try:
                    with torch.no_grad():
                        replayed = policy(obs, tokens, state, chunk=None)
                finally:
                    hook.remove()
                _, logit = policy.value(seen[0])
                value_loss = pact_value_loss(
                    logit, target, replayed.logp, old_logp, mask, config.pact_max_ratio
                )
                optimizer.zero_grad(set_to_none=True)
                value_loss.backward()
                if config.grad_clip:
                    torch.nn.utils.clip_grad_norm_(trained, config.grad_clip)
                optimizer.step()

            # critic (--critic state): its own step on the decisions' ARENA facts, never the pixels
            value = result.value.detach()
            if critic is not None:
                logit = critic(torch.from_numpy(rollout.facts[tt, nn]))
                bce = F.binary_cross_entropy_with_logits(logit, target, reduction="none")
                value_loss = (bce * mask).sum() / count
                critic_optimizer.zero_grad(set_to_none=True)
                value_loss.backward()
                if config.grad_clip:
                    torch.nn.utils.clip_grad_norm_(list(critic.parameters()), config.grad_clip)
                critic_optimizer.step()
                value = torch.sigmoid(logit.detach())

            # what the step did
            with torch.no_grad():
                d = log_ratio.detach()
                add = {
                    "decisions": float(count),
                    "policy_loss": float((surrogate.detach() * mask).sum()),
                    "value_loss": float(value_loss.detach()) * float(count),
                    "kl_old": float((((d.exp() - 1) - d) * mask).sum()),
                    "clip_fraction": float((clipped.float() * mask).sum()),
                    "entropy": float((-result.logp.detach() * mask).sum()),
                    "value": float((value * mask).sum()),
                }
                if config.clip_mode == "adaptive":
                    add["clip_low"] = float((low * mask).sum())
                    add["clip_high"] = float((high * mask).sum())
            for k, v in add.items():
                sums[k] = sums.get(k, 0.0) + v
            steps_taken += 1
    return sums, steps_taken


def _game_stats(finished: list[dict[str, Any]], weights: dict[str, float]) -> dict[str, float]:
    games = [g for g in finished if g.get("valid")]
    stats: dict[str, float] = {"games": float(len(games)), "invalid": float(len(finished) - len(games))}
    if not games:
        return stats
    outcomes = [g["outcome"] for g in games]
    stats["win_rate"] = outcomes.count("win") / len(games)
    stats["draw_rate"] = outcomes.count("draw") / len(games)
    for opponent in sorted({g.get("opponent", "ai") for g in games}):
        against = [g["outcome"] for g in games if g.get("opponent", "ai") == opponent]
        stats[f"win_rate_vs_{opponent}"] = against.count("win") / len(against)
    stats["setup_complete"] = float(np.mean([bool(g["setup"].get("complete")) for g in games]))
    for name in (OUTCOME, *TERMS):
        stats[f"reward_{name}"] = float(np.mean([g["terms"][name] for g in games]))
    stats["return"] = float(
        np.mean([g["terms"][OUTCOME] + sum(w * g["terms"][k] for k, w in weights.items()) for g in games])
    )
    return stats


def _progress_file(path: Path) -> Any:
    saved = load_checkpoint(path)
    if "ppo_config" not in saved.extra:
        raise UserError(f"{path} is not a train-ppo progress file")
    return saved


def train_ppo(
    config: PPOConfig, *, resume: bool = False, changes: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Train (or resume) a PPO run; returns the summary the command prints."""
    out = Path(config.out)

    # --- settings and resume: everything is checked before anything is written ---
    run = TrainingRun(out, "train-ppo", (PROGRESS, LAST, CONFIG), _progress_file, resume=resume)
    saved = run.saved
    if saved is not None:
        config = run.resumed(PPOConfig.from_dict(saved.extra["ppo_config"]), changes, ("out",))
    run.use(config.threads)

    # --- the policy, its frozen start (for --bc-kl), the optimizer ---
    policy, identity = _start_policy(config)
    # --- the privileged critic (--critic state) and the shaping's potential (--value-shaping) ---
    critic, potential, critic_identity = _state_critic(config)
    if saved is not None:
        stored = dict(saved.extra["identity"])
        sha = "critic_init_weights_sha256"
        if stored.pop(sha, None) != critic_identity.get(sha):
            raise UserError(
                f"--critic-init {config.critic_init} is not the state value this run started from "
                "(its weights differ)"
            )
        if identity != stored:
            raise UserError(
                f"--init {config.init} is not the checkpoint this run started from (its weights differ)"
            )
    identity.update(critic_identity)
    reference = None
    if config.bc_kl:
        reference = copy.deepcopy(policy).eval()
        reference.requires_grad_(False)
    critic_optimizer = None
    if critic is not None:
        critic_optimizer = adam(list(critic.parameters()), config.critic_lr)
    if saved is not None:
        policy.load_state_dict(saved.policy.state_dict())
        if critic is not None:
            critic.load_state_dict(saved.extra["critic"])
            critic_optimizer.load_state_dict(saved.extra["critic_optimizer"])
    trained = [p for p in policy.parameters() if p.requires_grad]
    optimizer = adam(trained, config.lr)
    progress: dict[str, Any] = {"update": 0, "decisions": 0, "games": 0, "history": [], "seconds": 0.0}
    if saved is not None:
        optimizer.load_state_dict(saved.optimizer)
        progress.update(saved.extra["progress"])
    provenance = Provenance(data={"ppo": config.to_dict(), **identity}, seed=config.seed)
    league = None
    if config.opponent == "league":
        league = League(out / "league", config.league_every, config.seed)
        if saved is not None:
            league.restore(saved.extra["league"])

    # --- the imitation data replayed beside PPO (--replay) ---
    replay = None
    if config.replay is not None:
        replay = Replay(
            config.replay,
            config.replay_sources,
            policy.config.layout,
            config.window,
            config.batch,
            config.seed,
            position=None if saved is None else saved.extra["replay"],
            timing=start_timing(config.init),
        )

    # --- the games ---
    settings = RolloutSettings(
        size=config.size,
        layout=policy.config.layout,
        speed=config.speed,
        max_days=config.max_days,
        max_decisions=config.max_decisions,
        record=str(out / "sessions") if config.record else None,
        codec=config.codec,
        state=critic is not None or potential is not None,
    )
    schedule = Schedule(
        games=config.games,
        arenas=config.arena,
        map_seeds=config.map_seeds,
        ai_strength=config.ai_strength,
        seed=config.seed,
        opponents=config.opponents,
        saves=() if config.ladder is None else rung_starts(config.ladder, config.rungs),
    )
    from hoi4_arena.play.runner import open_station

    # --peer: the station held for the run; an unknown name, an unreachable station or one that cannot
    # start games is a UserError here, before OUT is written.
    station = open_station(config.peer, None if config.peers is None else Path(config.peers))

    def save(path: Path, with_progress: bool) -> Path:
        extra: dict[str, Any] = {
            "ppo_config": config.to_dict(),
            "update": progress["update"],
            "identity": identity,
        }
        if critic is not None:
            extra["critic"] = {k: v.detach().clone() for k, v in critic.state_dict().items()}
        if with_progress:
            extra.update(progress=progress, engine=engine.state())
            if critic_optimizer is not None:
                extra["critic_optimizer"] = critic_optimizer.state_dict()
            if replay is not None:
                extra["replay"] = replay.position()
            if league is not None:
                extra["league"] = league.state()
        return save_checkpoint(
            path, policy, provenance=provenance, optimizer=optimizer if with_progress else None, extra=extra
        )

    run.start({"train": config.to_dict(), "policy": policy.config.to_dict(), **identity}, write=save)
    if league is not None and saved is None:
        league.add(policy, 0, provenance)  # the start is the league's first member
    stop = "updates"
    cluster = contextlib.nullcontext(None)
    if config.ray is not None:
        from hoi4_arena.play.ray_games import RayGames  # the scale-out layer, only with --ray

        cluster = RayGames.connect(config.ray)
    with (
        station as peer_games,
        cluster as ray_games,
        contextlib.closing(replay) if replay is not None else contextlib.nullcontext(),
        Rollouts(
            settings,
            schedule,
            workers=config.workers,
            weights=config.reward,
            temperature=config.temperature,
            reset_memory=config.reset_memory,
            league=league,
            ray=None if ray_games is None else ray_games.ray,
            station=peer_games,
        ) as engine,
        run.loop() as bar,
    ):
        if saved is not None:
            engine.restore(saved.extra["engine"])
        else:
            engine.start(policy)
        task = bar.add_task(
            "train-ppo", total=config.updates, completed=progress["update"], visible=config.progress
        )
        for update in range(progress["update"], config.updates):
            tick = time.monotonic()

            # --- 1. rollout ---
            policy.eval()
            rollout = engine.collect(policy, config.steps)

            # --- 2. advantages and the value's targets, 3. windows, 4. the learning ---
            if critic is not None and config.critic_init is None and update == 0:
                _standardise(critic, rollout)
            advantages, value_target = advantages_of(rollout, config, critic, potential)
            policy.train()
            learn_tick = time.monotonic()
            sums, steps_taken = ppo_update(
                policy,
                reference,
                optimizer,
                rollout,
                advantages,
                value_target,
                config,
                update,
                critic,
                critic_optimizer,
                replay,
            )
            learn_seconds = time.monotonic() - learn_tick

            # --- 5. logs ---
            n = max(sums.get("decisions", 0.0), 1.0)
            metrics = {k: v / n for k, v in sums.items() if k != "decisions"}
            games = _game_stats(rollout.finished, config.reward)
            metrics.update({f"games/{k}": v for k, v in games.items()})
            metrics["collect_decisions_per_s"] = (
                rollout.decisions / rollout.seconds if rollout.seconds else 0.0
            )
            metrics["learn_decisions_per_s"] = (
                config.epochs * rollout.decisions / learn_seconds if learn_seconds else 0.0
            )
            metrics["optimizer_steps"] = steps_taken
            if config.bc_kl:
                metrics["bc_kl_weight"] = bc_kl_weight(config, update)
            if potential is not None and rollout.valid.any():
                shaping = value_shaping(rollout, config, potential)
                metrics["value_shaping"] = float(shaping[torch.from_numpy(rollout.valid)].mean())
            metrics["valid_decisions"] = float(rollout.valid.mean())
            valid = torch.from_numpy(rollout.valid)
            metrics["entropy_rollout"] = float(rollout.entropy[valid].mean()) if rollout.valid.any() else 0.0
            progress["update"] = update + 1
            progress["decisions"] += rollout.decisions
            progress["games"] += len(rollout.finished)
            progress["seconds"] += time.monotonic() - tick
            progress["history"].append({"update": update + 1, **metrics})
            win = games.get("win_rate")
            run.log(
                update + 1,
                {
                    **{k if "/" in k else f"train/{k}": v for k, v in metrics.items()},
                    "rollout/invalid_workers_replaced": engine.replaced,
                },
                task=task,
                advance=1,
                description=f"train-ppo: update {update + 1}/{config.updates}"
                + (f" win {win:.2f}" if win is not None else "")
                + f" value loss {metrics.get('value_loss', 0):.3f}",
            )

            # --- 6. the league's next snapshot, saves, the guard ---
            if league is not None and league.due(update + 1):
                league.add(policy, update + 1, provenance)
            guard = run.minutes_over(config.max_minutes)
            last = update + 1 == config.updates or guard or run.stop is not None
            if last or run.save_due(config.save_every):
                run.checkpoint(f"update-{update + 1:04d}.pt")
            if guard:
                stop = "max_minutes"
                break
            if run.stop:  # Ctrl+C: saved above, resumable
                stop = run.stop
                break
        run.final_save(progress["update"] == 0)
    history = progress["history"]
    return run.finish(
        {
            "stopped": stop,
            "updates": progress["update"],
            "decisions": progress["decisions"],
            "games_finished": progress["games"],
            "last": history[-1] if history else None,
            "first": history[0] if history else None,
            "checkpoint": str(out / LAST),
            "progress": str(out / PROGRESS),
            "weights_sha256": weights_sha256(policy.state_dict()),
            "workers_replaced": engine.replaced,
            "peer": None if peer_games is None else {"name": peer_games.name, "games": peer_games.games},
            "opponent": config.opponent,
            "league": league.state()["snapshots"] if league is not None else None,
            "threads": torch.get_num_threads(),
            "seconds": run.seconds,
        }
    )
