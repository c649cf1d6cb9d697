"""Benchmark: a capture with views from a simulator worker over TLS on loopback, against stdio and
in-process.

Three copies of the same worker (`SimWorker`, same arena, seed, size and layout):

- in-process: `worker.capture(CaptureRequest(views=True))` on this thread;
- stdio:      a subprocess serving it on stdin/stdout (`spawn_stdio_worker`), the project's baseline;
- tls:        `hoi4-arena serve-worker` in a subprocess on 127.0.0.1 with a fresh bundle, reached with
              the pinned-TLS client (`cluster.station.connect`), token and all.

The rounds interleave the three (one capture each per round, after a warm-up) so that a busy machine
slows all of them alike. Prints p50 and p99 in ms and the ratios tls / stdio and tls / in-process
(the aim: TLS within 1.3x of stdio), with the payload size and the load average.

Try: python bench/remote.py --rounds 200
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hoi4_arena.cluster.peers import find_peer, make_bundle
from hoi4_arena.cluster.station import connect
from hoi4_arena.screen.probe import percentiles
from hoi4_arena.screen.protocol import spawn_stdio_worker
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import CaptureRequest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--size", default="960x540")
    parser.add_argument("--layout", default="full")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    kwargs = {"arena": "river", "seed": 3, "size": [height, width], "layout": args.layout}

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HOI4_ARENA_PEERS": str(Path(tmp) / "peers.json")}
        port = free_port()
        make_bundle("bench", Path(tmp) / "station", port=port, peers=Path(tmp) / "peers.json")
        server = subprocess.Popen(
            [sys.executable, "-m", "hoi4_arena.cli", "serve-worker", "--game", "sim", "--arena", "river:3"]
            + [
                "--seed",
                "3",
                "--size",
                args.size,
                "--layout",
                args.layout,
                "--bundle",
                str(Path(tmp) / "station"),
            ]
            + ["--listen", f"127.0.0.1:{port}"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        line = server.stderr.readline()
        if not line.startswith("listening"):
            raise SystemExit(f"serve-worker did not start: {line}{server.stderr.read()}")
        local = SimWorker(**{**kwargs, "size": tuple(kwargs["size"])})
        stdio = spawn_stdio_worker(
            [sys.executable, "-m", "hoi4_arena.screen.protocol", "hoi4_arena.screen.sim_worker:SimWorker"]
            + ["--kwargs", json.dumps(kwargs)]
        )
        tls = connect(find_peer("bench", Path(tmp) / "peers.json"))
        try:
            for worker in (local, stdio, tls):
                worker.attach()
            workers = {"in-process": local, "stdio": stdio, "tls": tls}
            request = CaptureRequest(views=True)
            times: dict[str, list[float]] = {name: [] for name in workers}
            payload = sum(v.nbytes for v in local.capture(request).views.values())
            for round_ in range(args.warmup + args.rounds):
                for name, worker in workers.items():
                    start = time.perf_counter()
                    capture = worker.capture(request)
                    elapsed = (time.perf_counter() - start) * 1e3
                    if round_ >= args.warmup:
                        times[name].append(elapsed)
                    assert capture.views["global"].dtype == np.uint8
        finally:
            for worker in (tls, stdio, local):
                worker.close()
            server.terminate()
            server.wait(timeout=30)

    stats = {name: percentiles(values) for name, values in times.items()}
    result = {
        "size": args.size,
        "layout": args.layout,
        "rounds": args.rounds,
        "payload_bytes": payload,
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "capture_ms": stats,
        "tls_over_stdio_p50": round(stats["tls"]["p50"] / stats["stdio"]["p50"], 2),
        "tls_over_stdio_p99": round(stats["tls"]["p99"] / stats["stdio"]["p99"], 2),
        "tls_over_in_process_p50": round(stats["tls"]["p50"] / stats["in-process"]["p50"], 2),
    }
    print(
        f"capture with views, {args.size} {args.layout} layout, {payload / 1e6:.2f} MB a capture, "
        f"{args.rounds} rounds, load average {result['load_average']}"
    )
    for name, stat in stats.items():
        print(f"{name:>11}: p50 {stat['p50']:8.3f} ms   p99 {stat['p99']:8.3f} ms")
    print(
        f"tls / stdio: {result['tls_over_stdio_p50']}x at p50, {result['tls_over_stdio_p99']}x at p99; "
        f"tls / in-process: {result['tls_over_in_process_p50']}x at p50"
    )
    if args.json:
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
