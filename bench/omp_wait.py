"""Benchmark: a training step on two torch threads, alone and beside one busy process, with OpenMP's
default wait policy and with OMP_WAIT_POLICY=PASSIVE.

Torch's CPU threads meet at the end of every parallel region; with the default policy a thread that
arrives first spins for a while before it sleeps. On a 2-core machine where one other process is busy,
a thread's sibling is often descheduled while it spins, and a step can take many times longer than on
one thread (a 12,000-step train-bc run here: 0.26 s a step alone, 3.8-5.4 s beside one record-ai game;
docs/training.md). PASSIVE makes the waiting thread sleep at once.

Each case is `bench/bc_step.py --threads 2` (train-bc's step, the chunked path's median step time) in a
fresh process, since OpenMP reads the policy when it starts; the neighbour is a process spinning in
Python on its own. The cases run in turn, `--rounds` times in alternating order. Prints each case's
median step time, the ratio of the default policy's time to PASSIVE's alone and beside the neighbour,
and the load average.

Try: .venv/bin/python bench/omp_wait.py --steps 2 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

STEP = Path(__file__).with_name("bc_step.py")
SPIN = "while True: pass"
RECORD_AI = [
    "-m",
    "hoi4_arena.cli",
    "record-ai",
    "{out}",
    "--player",
    "search",
    "--games",
    "80",
    "--arena",
    "river:1000-1039",
    "--seed",
    "3000",
    "--no-record",
]
"""The other neighbour: the search player's games, one process (what the 12,000-step run stalled beside)."""


def start_neighbour(kind: str, scratch: Path) -> subprocess.Popen:
    if kind == "spin":
        return subprocess.Popen([sys.executable, "-c", SPIN])
    out = scratch / f"games-{len(list(scratch.iterdir()))}"
    command = [sys.executable, *(arg.format(out=out) for arg in RECORD_AI)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def step_seconds(policy: str | None, busy: bool, args: argparse.Namespace, scratch: Path) -> float:
    """bc_step.py's chunked median step time in a fresh process with this wait policy and neighbour."""
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    neighbour = start_neighbour(args.neighbour, scratch) if busy else None
    try:
        command = [
            sys.executable,
            str(STEP),
            "--threads",
            "2",
            "--steps",
            str(args.steps),
            "--batch",
            str(args.batch),
            "--window",
            str(args.window),
        ]
        out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    return json.loads(out.strip().splitlines()[-1])["chunked"]["step_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2, help="timed steps of each case (after a warm-up)")
    parser.add_argument("--batch", type=int, default=4, help="windows a step")
    parser.add_argument("--window", type=int, default=8, help="decisions a window")
    parser.add_argument("--rounds", type=int, default=2, help="times each case runs, in alternating order")
    parser.add_argument(
        "--neighbour", choices=("spin", "record-ai"), default="spin", help="what runs beside the step"
    )
    args = parser.parse_args()
    if os.cpu_count() != 2:
        print(f"note: this machine has {os.cpu_count()} CPUs; the stall needs a neighbour on every core")
    cases = [(policy, busy) for busy in (False, True) for policy in (None, "PASSIVE")]
    times: dict[tuple[str | None, bool], list[float]] = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for case in cases if round_ % 2 == 0 else cases[::-1]:
                times[case].append(step_seconds(*case, args, Path(scratch)))
    median = {case: statistics.median(values) for case, values in times.items()}
    for policy, busy in cases:
        name = f"{policy or 'default'} wait, {f'beside {args.neighbour}' if busy else 'alone'}"
        print(f"{name:45s} {median[(policy, busy)]:7.3f} s a step")
    for busy in (False, True):
        ratio = median[(None, busy)] / median[("PASSIVE", busy)]
        print(f"default / PASSIVE, {f'beside {args.neighbour}' if busy else 'alone'}: {ratio:.2f}x")
    print(f"load average {os.getloadavg()[0]:.2f} (the neighbour's core counted while it ran)")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
