"""Benchmark: behaviour-cloning training decisions per second on this CPU, chunked path vs naive path.

One training step of train-bc's default config -- encoder cnn, layout cpu, windows of 16 decisions,
batches of 8 windows, AdamW, gradient clipping -- timed two ways in one process, interleaved:

- chunked: `Policy.forward(..., chunk=4)` (train-bc's default): perception of all 128 frames at once,
  the trained blocks and readers recomputed 4 frames at a time in the backward pass, then the memory
  over the window and the head over every decision at once;
- naive: `Policy.forward_naive(...)`: every decision on its own, everything recomputed (the reference
  the tests hold the chunked path to).

Views, speeds, pointers and tokens are random (no layer's cost depends on what the pixels show; about
30% of the slots are moves, as in busy play). It prints the median step time of each path, decisions/s
(B x T / step time), the ratio chunked / naive in decisions/s, the thread count and the load average.
Torch's CPU threads spin: on a loaded 2-core machine 2 threads can be many times slower than 1, so the
thread count is pinned (--threads, default 1) and reported.

With --loader WxH it also times the data side that feeds those steps: a synthetic recording (x264 at
10 Hz, a moving pattern with texture, a click every second) written with the real SessionWriter, read
for one epoch by train-bc's loader (decode, views, windows of 16, batches of 8) with each of
--loader-workers, in decisions/s. Training runs at the slower of the two rates.

--keep-data DIR keeps the recordings (in DIR/data), e.g. to time train-bc end to end on them.

--profile N adds one profiled step of each path: its CPU time, the share spent in convolutions (forward
and backward) and its N costliest operators, to show where the limit of the ratio lies.

Try: .venv/bin/python bench/bc_step.py --steps 5 --loader 1920x1080 --loader-workers 0,2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.models.config import ActionSpace, PolicyConfig
from hoi4_arena.models.policy import Observation, Policy
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.sessions.format import SessionManifest
from hoi4_arena.sessions.writer import SessionWriter


def random_window(
    config: PolicyConfig, batch: int, window: int, seed: int
) -> tuple[Observation, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    sizes, space = config.sizes, ActionSpace.default()
    lead = (batch, window)

    def pixels(*shape: int) -> torch.Tensor:
        return torch.randint(0, 256, (*lead, *shape), dtype=torch.uint8, generator=g)

    clip = (sizes.clip,) if config.reads_clip else ()
    obs = Observation(
        global_view=pixels(*clip, *sizes.global_hw, 3),
        quadrants=pixels(4, *sizes.quadrant_hw, 3),
        fovea=pixels(sizes.fovea, sizes.fovea, 3),
        speed=torch.randint(1, config.speeds + 1, lead, generator=g),
        pointer=torch.randint(0, space.lattice, (*lead, 2), generator=g),
    )
    shape = (*lead, space.slots)
    move = torch.rand(shape, generator=g) < 0.3
    kind = torch.where(move, space.move_kinds[0], torch.randint(2, space.kinds, shape, generator=g))
    xy = torch.where(move[..., None], torch.randint(0, space.lattice, (*shape, 2), generator=g), 0)
    return obs, torch.cat([kind[..., None], xy], dim=-1)


def synthetic_session(folder: Path, size: tuple[int, int], frames: int) -> Path:
    """A recording of a moving, textured pattern with a click every second (x264, 10 Hz)."""
    height, width = size
    rng = np.random.default_rng(0)
    texture = rng.integers(0, 40, (height, width, 1), dtype=np.uint8)
    y = np.broadcast_to(np.arange(height)[:, None, None], (height, width, 1))
    x = np.broadcast_to(np.arange(width)[None, :, None], (height, width, 1))
    base = (
        np.concatenate([x * 180 // width, y * 180 // height, (x + y) * 90 // (width + height)], -1) + texture
    )
    base = base.astype(np.uint8)
    manifest = SessionManifest(source="scripted", game_speed=3, screen=(width, height), hz=10)
    t0, period = 10**12, 10**8
    with SessionWriter(folder, manifest, realtime=False) as writer:
        for i in range(frames):
            frame = np.roll(base, 7 * i, axis=1)
            side = height // 8
            x0, y0 = (37 * i) % (width - side), (23 * i) % (height - side)
            frame[y0 : y0 + side, x0 : x0 + side] = (230, 40, 40)
            pointer = (x0 + side // 2, y0 + side // 2)
            writer.add_frame(frame, t0 + i * period, pointer, True)
            if i % 10 == 0:
                t = t0 + i * period + 30_000_000
                writer.add_inputs(
                    [
                        InputEvent(t, "move", *pointer, source="scripted"),
                        InputEvent(t + 30_000_000, "button_down", *pointer, button="left", source="scripted"),
                        InputEvent(t + 60_000_000, "button_up", *pointer, button="left", source="scripted"),
                    ]
                )
        writer.close("bench")
    return folder


def time_loader(
    size: tuple[int, int], workers: list[int], frames: int, sessions: int, keep: Path | None = None
) -> dict:
    """Decisions per second of a loader epoch over synthetic sessions, for each worker count.

    The second epoch is timed: the first starts the worker processes (reported apart) and warms the
    numba cache and the file cache.
    """
    with tempfile.TemporaryDirectory() as temporary:
        root = keep or temporary
        for i in range(sessions):
            synthetic_session(Path(root) / "data" / f"s{i}", size, frames)
        found = find_sessions(Path(root) / "data", ("scripted",)).train
        out: dict = {
            "size": f"{size[1]}x{size[0]}",
            "sessions": sessions,
            "decisions": sum(s.decisions for s in found),
        }
        for count in workers:
            with WindowLoader(DataSettings(), count) as loader:
                start = time.perf_counter()
                epoch = loader.epoch(found, 0)
                next(epoch)
                to_first = time.perf_counter() - start
                for _ in epoch:
                    pass
                start = time.perf_counter()
                seen = sum(int(batch.arrays["region"].sum()) for batch, _ in loader.epoch(found, 1))
                elapsed = time.perf_counter() - start
            out[f"workers_{count}"] = {
                "first_batch_s": round(to_first, 2),
                "epoch_s": round(elapsed, 2),
                "decisions_per_s": round(seen / elapsed, 1),
            }
    return out


def profile_step(run, top: int) -> dict:
    """One step under torch's profiler: its CPU time, the share of convolutions (forward and backward:
    what the encoder costs whichever path runs it) and of the rest, and the `top` operators by self CPU."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) or 1
    conv = sum(e.self_cpu_time_total for e in events if "conv" in e.key.lower())
    ranked = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return {
        "cpu_ms": round(total / 1000, 1),
        "convolution_share": round(conv / total, 3),
        "top": [
            {"op": e.key, "ms": round(e.self_cpu_time_total / 1000, 1), "calls": e.count} for e in ranked
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps of each path (after one warm-up)")
    parser.add_argument("--batch", type=int, default=8, help="windows per step")
    parser.add_argument("--window", type=int, default=16, help="decisions per window")
    parser.add_argument(
        "--chunk", type=int, default=4, help="frames per recomputed chunk (train-bc's --chunk)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (pinned; reported)")
    parser.add_argument("--encoder", default="cnn", help="encoder of the timed policy")
    parser.add_argument("--layout", default="cpu", help="view layout of the timed policy")
    parser.add_argument("--loader", default=None, help="also time the loader on a synthetic WxH recording")
    parser.add_argument("--loader-workers", default="0,2", help="worker counts the loader is timed with")
    parser.add_argument("--loader-frames", type=int, default=300, help="frames of each synthetic recording")
    parser.add_argument("--loader-sessions", type=int, default=2, help="synthetic recordings")
    parser.add_argument(
        "--keep-data", type=Path, default=None, help="write the recordings to DIR/data and keep them"
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        help="also profile one step of each path: the N operators of most CPU time, and each path's share "
        "in convolutions (forward and backward), the part no change of path removes",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = PolicyConfig(layout=args.layout, encoder=args.encoder)
    policy = Policy(config).train()
    optimizer = torch.optim.AdamW(policy.parameters(), lr=3e-4)
    obs, tokens = random_window(config, args.batch, args.window, seed=0)
    decisions = args.batch * args.window

    def step(path: str) -> float:
        start = time.perf_counter()
        if path == "chunked":
            out = policy(obs, tokens, chunk=args.chunk)
        else:
            out = policy.forward_naive(obs, tokens)
        loss = -out.logp.mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optimizer.step()
        return time.perf_counter() - start

    paths = ("chunked", "naive")
    times: dict[str, list[float]] = {path: [] for path in paths}
    for path in paths:
        step(path)  # warm-up: allocations, first-call dispatch
    for _ in range(args.steps):
        for path in paths:  # interleaved, so a change of machine load hits both
            times[path].append(step(path))
    result = {
        "config": {
            "encoder": config.encoder,
            "layout": config.layout,
            "batch": args.batch,
            "window": args.window,
            "chunk": args.chunk,
            "parameters": policy.parameter_count()["total"],
        },
        "threads": torch.get_num_threads(),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "steps": args.steps,
    }
    for path in paths:
        median = float(np.median(times[path]))
        result[path] = {"step_s": round(median, 3), "decisions_per_s": round(decisions / median, 1)}
    if args.profile:
        result["profile"] = {path: profile_step(lambda p=path: step(p), args.profile) for path in paths}
    if args.loader:
        width, height = (int(v) for v in args.loader.lower().split("x"))
        workers = [int(v) for v in args.loader_workers.split(",")]
        result["loader"] = time_loader(
            (height, width), workers, args.loader_frames, args.loader_sessions, args.keep_data
        )
    result["ratio_chunked_over_naive"] = round(
        result["chunked"]["decisions_per_s"] / result["naive"]["decisions_per_s"], 2
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
