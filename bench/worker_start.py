"""Benchmark: starting the data loader's worker processes from the fork server vs spawning them.

Records two short scripted games, then, in one process, opens a `WindowLoader` with `--workers`
processes again and again and times each until its first batch arrives (the workers start, import
what they need, decode the first windows), alternating the two ways of starting them:

- spawn (the baseline, what the loader and the rollout engine did before): every worker is a fresh
  interpreter that imports numpy, PyAV, numba's resampler and the project again;
- the project's (`processes.worker_context`): workers are forked from a server that imported those
  modules once; the server's own start is paid by the first loader only, and is printed apart.

It prints the median time to the first batch of each way (the fork server's first start left out) and
the ratio spawn / project. The load average is printed: the machine may be shared.

Try: .venv/bin/python bench/worker_start.py --rounds 5 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from hoi4_arena.data import loader as loader_module
from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.processes import worker_context


def first_batch_s(settings: DataSettings, sessions: list, workers: int, method: str | None) -> float:
    """Seconds from a new loader to its first batch, its workers started the `method` way."""
    loader_module.worker_context = lambda: worker_context(method)
    try:
        start = time.perf_counter()
        with WindowLoader(settings, workers) as loader:
            next(iter(loader.epoch(sessions, 0)))
            return time.perf_counter() - start
    finally:
        loader_module.worker_context = worker_context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="loaders opened each way")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of each loader")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-worker-start-") as tmp:
        folder = Path(tmp)
        run_record_ai(RecordAIConfig(out=folder, player="scripted", games=2, max_days=5, progress=False))
        sessions = find_sessions(folder, ("scripted",)).train
        settings = DataSettings(DecodeSettings("cpu"), window=4, batch=2)
        server_start = first_batch_s(settings, sessions, args.workers, None)  # starts the fork server
        times: dict[str, list[float]] = {"spawn": [], "project": []}
        for _ in range(args.rounds):
            times["spawn"].append(first_batch_s(settings, sessions, args.workers, "spawn"))
            times["project"].append(first_batch_s(settings, sessions, args.workers, None))
    spawn_s, project_s = (statistics.median(times[k]) for k in ("spawn", "project"))
    result = {
        "workers": args.workers,
        "rounds": args.rounds,
        "spawn_s": round(spawn_s, 3),
        "project_s": round(project_s, 3),
        "first_project_s_with_server_start": round(server_start, 3),
        "ratio": round(spawn_s / project_s, 2),
        "load": round(os.getloadavg()[0], 2),
    }
    print(
        f"first batch with {args.workers} workers: spawn {spawn_s:.2f} s, from the fork server "
        f"{project_s:.2f} s ({result['ratio']}x; the server's own start made the first {server_start:.2f} s)"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
