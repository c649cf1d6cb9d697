"""Benchmark: the same map work with glibc's default malloc limits and with `keep_freed_memory()`.

The work: HOI4 mods of presets written and audited (`hoi4.export.write_mod`, `hoi4.audit.audit_mod`:
rasters of 3.6 million pixels, built and dropped many times) and fresh arena maps generated
(`maps.generate`), as `export-hoi4`, `audit-map` and the simulator's start do. malloc's limits are a
process's own, so each measurement is a fresh child process, the two settings taking turns (default,
kept, default, kept, ...): the same work, in one run of this script. Each child times only the work
(its imports and start-up excluded): wall seconds, CPU seconds in user and kernel mode (getrusage) and
page faults. It prints the median of each setting and the ratios default / kept. `--thread` does the
work in a thread of its own, as the video encoder, a capture or a Ray task allocates (glibc gives such a
thread an arena of its own unless `keep_freed_memory` has them share one).

Try: .venv/bin/python bench/allocator.py --rounds 3
     .venv/bin/python bench/allocator.py --rounds 3 --thread
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def work(presets: list[str], seeds: int) -> None:
    from hoi4_arena.hoi4.audit import audit_mod
    from hoi4_arena.hoi4.export import write_mod
    from hoi4_arena.maps import generate

    with tempfile.TemporaryDirectory() as folder:
        for preset in presets:
            out = Path(folder) / preset
            write_mod(generate(preset, 0), out)
            assert audit_mod(out) == [], f"{preset}: the mod does not audit clean"
    for seed in range(1, seeds + 1):
        generate(presets[0], 100 + seed)


def child(mode: str, presets: list[str], seeds: int, in_thread: bool) -> dict[str, float]:
    if mode == "kept":
        from hoi4_arena.allocator import keep_freed_memory

        keep_freed_memory()
    import hoi4_arena.hoi4.export  # noqa: F401 -- imports outside the timed part

    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if in_thread:
        thread = threading.Thread(target=work, args=(presets, seeds))
        thread.start()
        thread.join()
    else:
        work(presets, seeds)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    return {
        "wall_s": wall,
        "user_s": after.ru_utime - before.ru_utime,
        "system_s": after.ru_stime - before.ru_stime,
        "page_faults": after.ru_minflt - before.ru_minflt,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="children of each setting")
    parser.add_argument("--presets", default="plains,salient", help="mods written and audited")
    parser.add_argument("--seeds", type=int, default=2, help="fresh maps generated after the mods")
    parser.add_argument("--thread", action="store_true", help="do the work in a thread of its own")
    parser.add_argument("--child", choices=("default", "kept"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    presets = args.presets.split(",")
    if args.child:
        print(json.dumps(child(args.child, presets, args.seeds, args.thread)))
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.setdefault("OMP_NUM_THREADS", "1")
    runs: dict[str, list[dict[str, float]]] = {"default": [], "kept": []}
    for _ in range(args.rounds):
        for mode in runs:
            argv = [
                sys.executable,
                __file__,
                "--child",
                mode,
                "--presets",
                args.presets,
                "--seeds",
                str(args.seeds),
                *(["--thread"] if args.thread else []),
            ]
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            runs[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
    medians = {
        mode: {key: statistics.median(r[key] for r in rows) for key in rows[0]} for mode, rows in runs.items()
    }
    ratios = {key: medians["default"][key] / max(medians["kept"][key], 1e-9) for key in medians["kept"]}
    print(
        json.dumps(
            {
                "work": {
                    "presets": presets,
                    "maps": args.seeds,
                    "rounds": args.rounds,
                    "thread": args.thread,
                },
                "load_average": os.getloadavg(),
                "median": medians,
                "ratio_default_over_kept": ratios,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
