"""Watching a game's machine: the `telemetry` command (one JSON report, N of them with `--count`, or a live
table with `--watch`) over the worker it watches, a station's observer connection (`--peer`) or a game
opened here. The reports themselves are `telemetry.py`'s; this module only opens the worker, samples and
shows.

Try: hoi4-arena telemetry --game sim --size 320x180
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any

from hoi4_arena.cluster.station import open_peer
from hoi4_arena.cluster.telemetry import Telemetry
from hoi4_arena.cluster.watch_config import TelemetryConfig
from hoi4_arena.screen.probe import open_chosen
from hoi4_arena.screen.worker import Worker


def _number(value: Any, unit: str = "", digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def table(sample: dict[str, Any], source: str):
    """A rich table of one report."""
    from rich.table import Table

    host, worker, game = sample["host"], sample["worker"], sample.get("game")
    grid = Table(title=f"telemetry: {source}", show_header=True, header_style="bold")
    grid.add_column("what")
    grid.add_column("value", justify="right")
    memory, disk, network = host["memory"], host.get("disk"), host.get("network")
    grid.add_row(f"host {host['name']} CPU ({host['cpu_count']} cores)", _number(host["cpu_percent"], " %"))
    grid.add_row("host memory", f"{memory['used_mb']:.0f} / {memory['total_mb']:.0f} MB")
    if disk is not None:
        grid.add_row(f"host disk {disk['path']}", f"{disk['used_gb']:.1f} / {disk['total_gb']:.1f} GB")
    if network is not None:
        grid.add_row(
            "host network (sent / received)",
            f"{_number(network['sent_kbps'])} / {_number(network['recv_kbps'])} kB/s",
        )
    grid.add_row(f"worker (pid {worker['pid']}) CPU", _number(worker["cpu_percent"], " %"))
    grid.add_row("worker memory", _number(worker["rss_mb"], " MB", 0))
    if game is None:
        grid.add_row("game", "-")
    elif game.get("in_process"):
        grid.add_row("game", "inside the worker's process")
    else:
        grid.add_row(f"game (pid {game['pid']}) CPU", _number(game["cpu_percent"], " %"))
        grid.add_row("game memory", _number(game["rss_mb"], " MB", 0))
    recorder = sample["recorder"]
    grid.add_row("recorder encoder lag", _number(recorder["encoder_lag_ms"], " ms"))
    grid.add_row("recorder dropped frames", _number(recorder["dropped_frames"], "", 0))
    lateness = sample.get("apply_lateness_ms")
    if lateness is None:
        grid.add_row("apply lateness", "-")
    else:
        grid.add_row(
            f"apply lateness p50 / max ({lateness.get('count', 0)} events)",
            f"{_number(lateness.get('p50'), '', 2)} / {_number(lateness.get('max'), ' ms', 2)}",
        )
    gpus = sample.get("gpu")
    if not gpus:
        grid.add_row("GPU", "none seen (NVML)")
    for unit in gpus or ():
        grid.add_row(
            f"GPU {unit['index']} {unit['name']}",
            f"{unit['util_percent']} %, {unit['memory_used_mb']:.0f} / {unit['memory_total_mb']:.0f} MB",
        )
    return grid


def open_watched(config: TelemetryConfig | Any) -> Worker:
    """The worker a watching command reads: a station's observer client (--peer), or a game opened here.
    Attached."""
    if config.peer is not None:
        worker = open_peer(config.peer, config.peers, observer=True)
    else:
        worker = open_chosen(config)
    try:
        worker.attach()
    except BaseException:
        worker.close()
        raise
    return worker


def run_telemetry(config: TelemetryConfig, out=None) -> list[dict[str, Any]]:
    """The `telemetry` command: samples `--interval` apart; JSON on `out` (stdout), or a live table.

    Returns the samples it showed (the last one for a single report)."""
    from rich.console import Console
    from rich.live import Live

    out = out or sys.stdout
    source = f"peer {config.peer}" if config.peer is not None else f"game {config.game}"
    count = config.count or (0 if config.watch else 1)
    samples: list[dict[str, Any]] = []
    worker = open_watched(config)
    try:
        telemetry = Telemetry(worker)
        telemetry.sample()  # primes the rates: every shown sample has them measured over an interval
        time.sleep(min(config.interval, 1.0) if count == 1 else config.interval)
        if not config.watch:
            for k in range(count):
                if k:
                    time.sleep(config.interval)
                samples.append(telemetry.sample())
                if count == 1:
                    json.dump(samples[-1], out, indent=1)
                else:
                    json.dump(samples[-1], out, separators=(",", ":"))
                out.write("\n")
                out.flush()
            return samples
        console = Console(file=out)
        with contextlib.suppress(KeyboardInterrupt):
            samples.append(telemetry.sample())
            shown = 1
            with Live(table(samples[-1], source), console=console, auto_refresh=False) as live:
                while not count or shown < count:
                    time.sleep(config.interval)
                    samples[-1:] = [telemetry.sample()]  # a watch may run for days: keep the last
                    shown += 1
                    live.update(table(samples[-1], source), refresh=True)
        return samples
    finally:
        worker.close()
