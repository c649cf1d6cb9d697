"""How likely a policy finds the expert's release of what the learner holds down (docs/dagger.md).

Over a DAgger run's games (`ITER/games/dagger-*`), the decisions the learner played that began with a
button or key held down and whose label releases it: the policy is run teacher-forced through each
training window (8 decisions from a fresh memory, as train-bc scores them, the inputs sent fed to its
memory, its held inputs given when it sees them), and the probability it gives the release's kind at the
label's slot is collected. Printed: how many such decisions, the median probability and the share above
one half. On games a policy trained on this says what it fitted; on the next iteration's games (states
it never trained on) what it learned.

Try: .venv/bin/python scripts/release_probability.py runs/dag-held/run/iter-001/bc/last.pt \\
        runs/dag-held/run/iter-002/games --games 6
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
from hoi4_arena.screen.tokens import RELEASES as RELEASE_KINDS
from hoi4_arena.sessions.labels import labelled_sessions, read_labels

RELEASES = np.array(RELEASE_KINDS)  # the release kind of each of PRESSES
ARRAYS = ("global_view", "quadrants", "fovea", "speed", "pointer", "tokens", "fed", "held")


def release_logps(checkpoint: str | Path, games: Path, count: int) -> list[float]:
    """The log-probability of each held-input release the labels ask of the learner, over the first
    `count` games of `games`."""
    loaded = load_checkpoint(checkpoint)
    policy = loaded.policy.eval()
    window = int(loaded.extra.get("train_config", {}).get("window", 8))
    found: list[float] = []
    for folder in labelled_sessions(games, "expert", "dagger-*")[:count]:
        session = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["id"]
        played = read_labels(folder, "expert").played
        samples = decode_session(folder, DecodeSettings("cpu", expert_sessions=(session,)))
        for _, w in cut_windows(samples, plan_spans(len(played), window), session):
            rows = [
                t
                for t in range(len(w.speed))
                if w.start + t < len(played) and not played[w.start + t] and w.held[t].any()
            ]
            if not rows:
                continue
            a = {k: torch.from_numpy(np.array(getattr(w, k)))[None] for k in ARRAYS}
            held = a["held"] if policy.config.held_inputs else None
            obs = Observation(
                a["global_view"], a["quadrants"], a["fovea"], a["speed"], a["pointer"], held=held
            )
            start = policy.initial_state(1)
            state = PolicyState(start.hidden, torch.from_numpy(np.array(w.previous))[None])
            with torch.no_grad():
                out = policy(obs, a["tokens"], state, fed=a["fed"])
            for t in rows:
                wanted = set(RELEASES[w.held[t]].tolist())
                slots = [s for s in range(8) if int(w.tokens[t, s, 0]) in wanted]
                if slots:
                    found.append(float(out.scores.kind_logp[0, t, slots[0]]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a policy checkpoint (e.g. a DAgger iteration's bc/last.pt)")
    parser.add_argument("games", type=Path, help="a DAgger iteration's games folder")
    parser.add_argument("--games", dest="count", type=int, default=6, help="the first N games (default 6)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    try:
        logps = release_logps(args.checkpoint, args.games, args.count)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not logps:
        print("no learner decision held something and was labelled with its release")
        return 0
    p = np.exp(np.array(logps))
    print(
        f"{len(p)} releases asked: median probability {np.median(p):.2f}, above one half {np.mean(p > 0.5):.0%}"
    )
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main())
