"""Benchmark: the memory train-bc's process takes to fill its store of held windows, with the large blocks
mapped while it fills (`allocator.large_blocks_mapped`, what `WindowLoader.hold` does) against the heap
(glibc's mmap threshold left at the 32 MiB `keep_freed_memory` sets, as before).

Each way runs in a fresh process (malloc's settings are per process): `keep_freed_memory()` as every
command calls it, then `WindowLoader.hold` on the first `--sessions` sessions of DATA (train and val,
as train-bc holds them) with the quickstart's data settings (`BC_SETTINGS`: windows of 8, `hold_gb`
12, held compressed when the raw views would not fit). The baseline process starts with
MALLOC_MMAP_THRESHOLD_ at the 32 MiB, which `large_blocks_mapped` leaves alone. It prints each way's
peak resident memory (ru_maxrss), the bytes held, the fill's seconds, and the peaks' ratio.

DATA is any folder of recorded sessions, e.g. a quickstart's demonstrations. On 1,536 demonstrations
of 30 days the baseline outgrew a 24 GiB machine; choose `--sessions` to fit the machine.

Try: .venv/bin/python bench/hold_memory.py runs/m0q/demos --sessions 96
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from hoi4_arena.allocator import MMAP_THRESHOLD


def fill(data: str, sessions: int, workers: int) -> dict:
    """In this process: hold the first `sessions` sessions as train-bc would; the peak and the bytes."""
    from hoi4_arena.allocator import keep_freed_memory

    keep_freed_memory()
    from hoi4_arena.data.loader import WindowLoader
    from hoi4_arena.data.sources import find_sessions
    from hoi4_arena.quickstart import BC_SETTINGS
    from hoi4_arena.training.bc import data_settings
    from hoi4_arena.training.bc_config import BCConfig

    with tempfile.TemporaryDirectory() as out:
        config = BCConfig(data=data, out=out, sources=("scripted",), workers=workers, **BC_SETTINGS)
        found = find_sessions(data, config.sources, config.layout)
        chosen = (found.train + found.val)[:sessions]
        settings = data_settings(config, found, config.policy_config)
        start = time.perf_counter()
        with WindowLoader(settings, workers) as loader:
            held = loader.hold(chosen)
            return {
                "sessions": len(chosen),
                "held": held,
                "compressed": loader.held_compressed,
                "held_gib": round(loader.held_bytes / 2**30, 3),
                "fill_seconds": round(time.perf_counter() - start, 1),
                "peak_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            }


def run_way(data: str, sessions: int, workers: int, baseline: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    if baseline:
        env["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)  # the heap for every block, as before
    args = [sys.executable, __file__, data, "--sessions", str(sessions), "--workers", str(workers), "--child"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"failed": done.returncode, "stderr": done.stderr[-500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a folder of recorded sessions")
    parser.add_argument("--sessions", type=int, default=96, help="how many of its sessions to hold")
    parser.add_argument("--workers", type=int, default=1, help="the loader's decoding processes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(fill(args.data, args.sessions, args.workers)), flush=True)
        return
    print(f"load {os.getloadavg()[0]:.1f}", flush=True)
    mapped = run_way(args.data, args.sessions, args.workers, baseline=False)
    print(json.dumps({"mapped while filling": mapped}), flush=True)
    heap = run_way(args.data, args.sessions, args.workers, baseline=True)
    print(json.dumps({"heap (before)": heap}), flush=True)
    if "peak_gib" in mapped and "peak_gib" in heap:
        print(
            f"peak resident memory: {heap['peak_gib']} GiB on the heap, {mapped['peak_gib']} GiB mapped: "
            f"{heap['peak_gib'] / mapped['peak_gib']:.1f}x less"
        )


if __name__ == "__main__":
    main()
