"""Benchmark: a driver playing through a station while 50 hostile connections hammer it, against the
same driver with nobody else connected.

`hoi4-arena serve-worker --game sim` runs in a subprocess on 127.0.0.1 with a fresh bundle. The driver
(this process, the token, pinned TLS) plays at its decision rate (5 Hz): each decision captures the
views and applies a pointer move, and its latency is that capture and apply. Three phases of the same
number of decisions: quiet, under attack, quiet again. The attack is a second process (at nice 19 by
default: attackers on other machines cost this machine's CPU nothing) with 50 threads,
each repeating one hostile behaviour as fast as the station lets it: an idle TLS connection, one
malformed line, a 60 MiB payload announced before the token, a wrong token with arm and apply sent in
the same write, plain TCP garbage, an attach sent a byte every 0.2 s, 100,000 levels of nesting.

Prints the driver's decision latency p50/p99 per phase and the ratio attack / quiet at p99 (the aim:
within 2x), the hostile connections made, the station's resident set (peak), and whether every input
the station applied was the driver's (it must be: nothing from a connection without the token).

Try: python bench/station_attack.py --decisions 75
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hoi4_arena.cluster.peers import find_peer, make_bundle
from hoi4_arena.cluster.station import connect
from hoi4_arena.cluster.tls import connect_pinned
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.probe import percentiles
from hoi4_arena.screen.worker import CaptureRequest

ATTACKERS = 50
KINDS = ("idle", "malformed", "payload", "wrong_token", "plaintext", "slow", "nesting")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def drain(sock: socket.socket) -> None:
    """Read until the station ends the connection."""
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass


def hostile(kind: str, host: str, port: int, fingerprint: str) -> None:
    """One hostile connection of `kind`, to its end."""
    if kind == "plaintext":
        with socket.create_connection((host, port), timeout=30) as sock:
            with contextlib.suppress(OSError):
                sock.sendall(os.urandom(4096) + b'{"op":"attach","id":1,"protocol":1,"token":"x"}\n')
            drain(sock)
        return
    with connect_pinned(host, port, fingerprint, timeout=30) as sock:
        with contextlib.suppress(OSError):
            if kind == "malformed":
                sock.sendall(b"{{{\n")
            elif kind == "payload":
                sock.sendall(b'{"op":"status","id":2,"bytes":62914560}\n')
                chunk = bytes(1 << 20)
                for _ in range(60):
                    sock.sendall(chunk)
            elif kind == "wrong_token":
                sock.sendall(
                    b'{"op":"attach","id":1,"protocol":1,"token":"guess"}\n'
                    b'{"op":"arm","id":2,"mode":"setup"}\n'
                    b'{"op":"apply","id":3,"events":[{"t_ns":0,"kind":"move","x":9,"y":9}]}\n'
                )
            elif kind == "slow":
                for byte in b'{"op":"attach","id":1,"protocol":1,"token":"guess"}\n':
                    sock.sendall(bytes([byte]))
                    time.sleep(0.2)
            elif kind == "nesting":
                depth = 100_000
                sock.sendall(b'{"op":"attach","id":1,"x":' + b"[" * depth + b"]" * depth + b"}\n")
        drain(sock)


def attack(host: str, port: int, fingerprint: str, stop, counts, nice: int) -> None:
    """The attacking process: ATTACKERS threads, each repeating one kind until `stop` is set."""
    os.nice(nice)

    def repeat(index: int) -> None:
        kind = KINDS[index % len(KINDS)]
        while not stop.is_set():
            try:
                hostile(kind, host, port, fingerprint)
            except OSError:
                time.sleep(0.01)  # refused or reset: the station is busy ending connections
            with counts.get_lock():
                counts[KINDS.index(kind)] += 1

    threads = [threading.Thread(target=repeat, args=(i,), daemon=True) for i in range(ATTACKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def rss_mb(pid: int) -> dict[str, float]:
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def cpu_s(pid: int) -> float:
    """CPU seconds (user and system) the process has used."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def play(driver, decisions: int, hz: float, start_x: int) -> list[float]:
    """`decisions` decisions at `hz`: capture the views, apply one move; their latencies in ms."""
    period, latencies = 1.0 / hz, []
    next_tick = time.perf_counter()
    for i in range(decisions):
        t0 = time.perf_counter()
        driver.capture(CaptureRequest(views=True))
        move = InputEvent(0, "move", start_x + i % 200, 100 + i % 50, source="policy")
        assert driver.apply([move])["applied"] == 1
        latencies.append((time.perf_counter() - t0) * 1e3)
        next_tick += period
        time.sleep(max(0.0, next_tick - time.perf_counter()))
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=75, help="decisions in each of the three phases")
    parser.add_argument("--hz", type=float, default=5.0, help="the driver's decision rate")
    parser.add_argument("--size", default="960x540")
    parser.add_argument("--layout", default="cpu")
    parser.add_argument(
        "--attacker-nice",
        type=int,
        default=19,
        help="the attacking process's niceness: 19 stands in for attackers on other machines (on one "
        "machine their own CPU would slow the driver's process whatever the station does); 0 to compete",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        peers = Path(tmp) / "peers.json"
        port = free_port()
        make_bundle("bench", Path(tmp) / "station", port=port, peers=peers)
        peer = find_peer("bench", peers)
        log_path = Path(tmp) / "station.log"
        with open(log_path, "w") as log:  # a file, not a pipe: a full pipe would stall the station
            server = subprocess.Popen(
                [sys.executable, "-m", "hoi4_arena.cli", "serve-worker", "--game", "sim"]
                + ["--arena", "river:3", "--seed", "3", "--size", args.size, "--layout", args.layout]
                + ["--bundle", str(Path(tmp) / "station"), "--listen", f"127.0.0.1:{port}"],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        deadline = time.monotonic() + 120
        while "listening" not in log_path.read_text():
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"serve-worker did not start: {log_path.read_text()}")
            time.sleep(0.1)
        context = multiprocessing.get_context("spawn")
        stop, counts = context.Event(), context.Array("i", len(KINDS))
        attacker = context.Process(
            target=attack, args=(peer.host, peer.port, peer.fingerprint, stop, counts, args.attacker_nice)
        )
        driver = connect(peer)
        phases: dict[str, list[float]] = {}
        memory: dict[str, dict[str, float]] = {}
        try:
            driver.attach()
            driver.arm("match")
            play(driver, 10, args.hz, 0)  # warm-up
            memory["start"] = rss_mb(server.pid)
            cpu = {}
            t0, c0 = time.perf_counter(), cpu_s(server.pid)
            phases["quiet"] = play(driver, args.decisions, args.hz, 0)
            cpu["quiet"] = (cpu_s(server.pid) - c0) / (time.perf_counter() - t0)
            attacker.start()
            time.sleep(1.0)  # every attacker thread has started
            t0, c0 = time.perf_counter(), cpu_s(server.pid)
            phases["attack"] = play(driver, args.decisions, args.hz, 300)
            cpu["attack"] = (cpu_s(server.pid) - c0) / (time.perf_counter() - t0)
            memory["attack"] = rss_mb(server.pid)
            stop.set()
            attacker.join(timeout=60)
            t0, c0 = time.perf_counter(), cpu_s(server.pid)
            phases["quiet again"] = play(driver, args.decisions, args.hz, 600)
            cpu["quiet again"] = (cpu_s(server.pid) - c0) / (time.perf_counter() - t0)
            applied = driver.telemetry()["reported"]["applied"]
        finally:
            stop.set()
            if attacker.is_alive():
                attacker.terminate()
            driver.close()
            server.terminate()
            out, _ = server.communicate(timeout=60)

    driven = 10 + 3 * args.decisions
    stats = {name: percentiles(values) for name, values in phases.items()}
    made = dict(zip(KINDS, counts[:], strict=True))
    result = {
        "decisions": args.decisions,
        "hz": args.hz,
        "size": args.size,
        "layout": args.layout,
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "latency_ms": stats,
        "attack_over_quiet_p99": round(stats["attack"]["p99"] / stats["quiet"]["p99"], 2),
        "attack_over_quiet_p50": round(stats["attack"]["p50"] / stats["quiet"]["p50"], 2),
        "hostile_connections": made,
        "attacker_nice": args.attacker_nice,
        "station_rss_mb": memory,
        "station_cpu_cores": {name: round(v, 2) for name, v in cpu.items()},
        "applied": applied,
        "driver_applied": driven,
        "station": json.loads(out) if out.strip().startswith("{") else out,
    }
    print(
        f"driver at {args.hz} Hz, {args.decisions} decisions a phase, {args.size} {args.layout} layout, "
        f"load average {result['load_average']}"
    )
    for name, stat in stats.items():
        print(
            f"{name:>12}: p50 {stat['p50']:8.2f} ms   p99 {stat['p99']:8.2f} ms   "
            f"station CPU {cpu[name]:.2f} cores"
        )
    print(
        f"attack / quiet: {result['attack_over_quiet_p99']}x at p99, {result['attack_over_quiet_p50']}x at p50; "
        f"{sum(made.values())} hostile connections ({', '.join(f'{k} {v}' for k, v in made.items())})"
    )
    print(
        f"station resident set: {memory['start']['VmRSS']} MB before, {memory['attack']['VmRSS']} MB under "
        f"attack, peak {memory['attack']['VmHWM']} MB; inputs applied {applied}, all the driver's: "
        f"{applied == driven}"
    )
    if args.json:
        print(json.dumps(result, indent=1))
    if applied != driven:
        raise SystemExit(f"the station applied {applied} inputs, the driver sent {driven}")


if __name__ == "__main__":
    main()
