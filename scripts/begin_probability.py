"""Does a policy begin acting where the demonstrator began? Its probability of acting, decision by decision.

    python scripts/begin_probability.py SESSION [SESSION ...] --policy CKPT [--policy CKPT ...]

Each SESSION is a recorded demonstration (a record-ai session folder, best one no policy trained on). Each
policy is run teacher-forced through the session's windows as train-bc scores them (a fresh memory per
window, the inputs sent fed to its memory, the decisions decoded with the policy's own --timing), once
with every decision's tokens set to no-ops: the probability it acts at a decision is then exactly
1 - p(eight no-ops), whatever slots its inputs would fall in. Printed per policy, over the decisions that
carry loss:

- acts: the mean probability of acting over all decisions, beside the share the demonstrator acts in;
- at beginnings: the mean probability at the decisions that begin acting (`training.bc.beginnings`: an
  input after a decision that sent none), where a player starts a step after waiting;
- while idle: the mean at the decisions where the demonstrator does nothing;
- AUC: how well the probability tells beginnings from idle decisions (0.5: not at all; 1: perfectly);
- then the mean at beginnings by their first input (`key_x_down`: the offensive tool's key, as a replan
  begins), for each first input that begins at least --min-count of them.

A policy that reads when to begin puts its acting probability on the beginnings (high AUC); its mean at
beginnings says how readily it begins once it does.

A SESSION the scripted player labelled in the shadow (a DAgger game, `ITER/games/dagger-*`) is read on the
learner's own states: only the decisions the learner played count, the label is what the demonstrator
would have sent, the learner's inputs feed the memory, and a beginning is a label that acts after a
decision in which the learner sent nothing. On the games of the policy that played them, this asks
whether it reads when to begin where its own play has taken it.

Try: .venv/bin/python scripts/begin_probability.py runs/scale/demos/scripted-g14[0-1]?-* \\
        --policy runs/inorder/s0/last.pt --policy runs/begin/s0/last.pt
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

import numpy as np
import torch

from hoi4_arena.data.decode import DecodeSettings, decode_session
from hoi4_arena.data.windows import cut_windows, plan_spans
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.models.policy import Observation, PolicyState
from hoi4_arena.screen.tokens import KIND_NAMES, NONE
from hoi4_arena.sessions.labels import has_labels, read_labels
from hoi4_arena.training.bc import beginnings

ARRAYS = ("global_view", "quadrants", "fovea", "speed", "pointer", "tokens", "fed", "held")


def acting_probabilities(checkpoint: str | Path, sessions: list[Path]) -> dict[str, np.ndarray]:
    """For every decision of `sessions` that carries loss: the policy's probability of acting (`p`),
    whether the demonstrator acted (`acts`), whether that began acting (`begins`) and the kind of its first
    input (`first`, NONE where it did not act), and its index in its session (`index`)."""
    loaded = load_checkpoint(checkpoint)
    policy = loaded.policy.eval()
    train = loaded.extra.get("train_config", {})
    window = int(train.get("window", 8))
    layout, timing = train.get("layout", "cpu"), train.get("timing", "recorded")
    rows: dict[str, list[np.ndarray]] = {"p": [], "acts": [], "begins": [], "first": [], "index": []}
    for folder in sessions:
        session = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["id"]
        labelled = has_labels(folder, "expert")
        settings = DecodeSettings(layout, timing=timing, expert_sessions=(session,) if labelled else ())
        samples = list(decode_session(folder, settings))
        played_by_learner = np.ones(len(samples) + window, bool)  # rows past the end carry no loss
        if labelled:
            played = read_labels(folder, "expert").played
            played_by_learner[: len(played)] = ~played
        for _, w in cut_windows(iter(samples), plan_spans(len(samples), window), session):
            a = {k: torch.from_numpy(np.array(getattr(w, k)))[None] for k in ARRAYS}
            held = a["held"] if policy.config.held_inputs else None
            obs = Observation(
                a["global_view"], a["quadrants"], a["fovea"], a["speed"], a["pointer"], held=held
            )
            previous = torch.from_numpy(np.array(w.previous))[None]
            start = policy.initial_state(1)
            idle = torch.zeros_like(a["tokens"])
            idle[..., 0] = NONE
            with torch.no_grad():
                out = policy(obs, idle, PolicyState(start.hidden, previous), fed=a["fed"])
            p_idle = out.scores.kind_logp[0].sum(-1).exp()  # (T,) p(eight no-ops)
            counted = np.asarray(w.loss_mask, bool) & played_by_learner[w.start : w.start + len(w.speed)]
            rows["p"].append((1 - p_idle).numpy()[counted])
            kinds = a["tokens"][0, ..., 0].numpy()  # (T, 8)
            acting = kinds != NONE
            rows["acts"].append(acting.any(-1)[counted])
            first = kinds[np.arange(len(kinds)), acting.argmax(-1)]  # NONE where nothing acts
            rows["first"].append(first[counted])
            rows["index"].append((w.start + np.arange(len(kinds)))[counted])
            rows["begins"].append(beginnings(a["tokens"], a["fed"], previous)[0].numpy()[counted])
    return {k: np.concatenate(v) for k, v in rows.items()}


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """The probability a random positive scores above a random negative (ties count half)."""
    if not len(positive) or not len(negative):
        return float("nan")
    scores = np.concatenate([positive, negative])
    ranks = scores.argsort().argsort().astype(float) + 1
    for value in np.unique(scores):  # average the ranks of ties
        same = scores == value
        ranks[same] = ranks[same].mean()
    wins = ranks[: len(positive)].sum() - len(positive) * (len(positive) + 1) / 2
    return float(wins / (len(positive) * len(negative)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sessions", nargs="+", type=Path, help="recorded demonstration session folders")
    parser.add_argument("--policy", action="append", required=True, help="a policy checkpoint (repeatable)")
    parser.add_argument(
        "--min-count",
        type=int,
        default=10,
        help="show a first input's beginnings from this many (default 10)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    sessions = [s for s in args.sessions if (s / "manifest.json").is_file()]
    if not sessions:
        print("error: none of the folders is a recorded session (no manifest.json)", file=sys.stderr)
        return 2
    for checkpoint in args.policy:
        try:
            r = acting_probabilities(checkpoint, sessions)
        except (UserError, OSError) as error:
            print(f"error: {checkpoint}: {error}", file=sys.stderr)
            return 2
        p, acts, begins = r["p"], r["acts"], r["begins"]
        print(
            f"{checkpoint}: {len(p)} decisions of {len(sessions)} sessions; acts {p.mean():.3f} "
            f"(demonstrator {acts.mean():.3f}); at {begins.sum()} beginnings {p[begins].mean():.3f}; "
            f"while idle {p[~acts].mean():.3f}; AUC beginnings against idle {auc(p[begins], p[~acts]):.3f}"
        )
        for kind in np.unique(r["first"][begins]):
            these = begins & (r["first"] == kind)
            if these.sum() >= args.min_count:
                print(f"    beginning with {KIND_NAMES[kind]}: {these.sum()}, mean {p[these].mean():.3f}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main())
