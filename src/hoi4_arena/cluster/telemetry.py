"""Telemetry: what a game's machine, its game process and its worker use, in one report.

A report (`report(answer, sampler)`, schema `SCHEMA`) is measured where the worker runs: by the
station for a peer (its `telemetry` op answers the whole report, observers included), or by this
process for a game opened here. Every value a side does not know is null:

    {"schema": 1, "time": unix s,
     "host": {"name", "cpu_count", "cpu_percent", "load_1m", "memory": {"total_mb", "used_mb",
              "percent"}, "disk": {"path", "total_gb", "used_gb", "percent"},
              "network": {"sent_mb", "recv_mb", "sent_kbps", "recv_kbps"}},
     "worker": {"pid", "cpu_percent", "rss_mb", "threads"},
     "game": {"pid", "cpu_percent", "rss_mb", "threads", "in_process"} | null,
     "recorder": {"encoder_lag_ms", "dropped_frames"},
     "apply_lateness_ms": {"count", "p50", "max", ...} | null,
     "gpu": [{"index", "name", "util_percent", "memory_used_mb", "memory_total_mb",
              "temperature_c"}] | null,
     "reported": the worker's own answer}

Rates (CPU %, network kB/s) are measured between two samples of one `HostSampler`, so its first
sample has them null. The recorder runs in the recording client's process, not the worker's: a worker
reports its encoder lag and dropped frames only where it holds a recorder (none does yet), else they
are null. The GPU is read through NVML (`pynvml`, optional: null without it or without a GPU).

`run_telemetry` is the `telemetry` command: one JSON report, N of them (`--count`), or a live table
(`--watch`).

Try: hoi4-arena telemetry --game sim --size 320x180
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from typing import Any

import psutil

from hoi4_arena.cluster.watch_config import TelemetryConfig
from hoi4_arena.screen.worker import Worker

SCHEMA = 1


class HostSampler:
    """This machine's and some processes' resource use; rates over the time since the previous sample."""

    def __init__(self, disk_path: str = "/") -> None:
        self.disk_path = disk_path
        self._processes: dict[int, psutil.Process] = {}
        self._cpu_primed = False
        self._network: tuple[float, Any] | None = None

    def machine(self) -> dict[str, Any]:
        cpu = psutil.cpu_percent(interval=None)  # since the previous call; meaningless on the first
        memory = psutil.virtual_memory()
        out: dict[str, Any] = {
            "name": socket.gethostname(),
            "cpu_count": psutil.cpu_count(),
            "cpu_percent": cpu if self._cpu_primed else None,
            "load_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "memory": {
                "total_mb": memory.total / 2**20,
                "used_mb": (memory.total - memory.available) / 2**20,
                "percent": memory.percent,
            },
            "disk": None,
            "network": None,
        }
        self._cpu_primed = True
        with contextlib.suppress(OSError):
            disk = psutil.disk_usage(self.disk_path)
            out["disk"] = {
                "path": self.disk_path,
                "total_gb": disk.total / 2**30,
                "used_gb": disk.used / 2**30,
                "percent": disk.percent,
            }
        with contextlib.suppress(OSError, RuntimeError):
            now, counters = time.monotonic(), psutil.net_io_counters()
            network = {"sent_mb": counters.bytes_sent / 2**20, "recv_mb": counters.bytes_recv / 2**20}
            network["sent_kbps"] = network["recv_kbps"] = None
            if self._network is not None and now > self._network[0]:
                seconds, before = now - self._network[0], self._network[1]
                network["sent_kbps"] = (counters.bytes_sent - before.bytes_sent) / 1e3 / seconds
                network["recv_kbps"] = (counters.bytes_recv - before.bytes_recv) / 1e3 / seconds
            self._network = (now, counters)
            out["network"] = network
        return out

    def process(self, pid: int) -> dict[str, Any]:
        """One process's use ({"pid", "running": false} once it has gone)."""
        first = pid not in self._processes
        try:
            if first:
                self._processes[pid] = psutil.Process(pid)
            process = self._processes[pid]
            with process.oneshot():
                cpu = process.cpu_percent(interval=None)
                return {
                    "pid": pid,
                    "running": True,
                    "cpu_percent": None if first else cpu,
                    "rss_mb": process.memory_info().rss / 2**20,
                    "threads": process.num_threads(),
                }
        except psutil.Error:
            self._processes.pop(pid, None)
            return {"pid": pid, "running": False, "cpu_percent": None, "rss_mb": None, "threads": None}


def gpu() -> list[dict[str, Any]] | None:
    """Each NVIDIA GPU's use through NVML; None without pynvml, a driver or a GPU."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # pynvml.NVMLError: no driver, no GPU
        return None
    try:
        out = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            out.append(
                {
                    "index": index,
                    "name": name.decode() if isinstance(name, bytes) else str(name),
                    "util_percent": pynvml.nvmlDeviceGetUtilizationRates(handle).gpu,
                    "memory_used_mb": memory.used / 2**20,
                    "memory_total_mb": memory.total / 2**20,
                    "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
                }
            )
        return out
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def report(answer: dict, sampler: HostSampler) -> dict[str, Any]:
    """The full report (module docstring) around a worker's own `telemetry()` answer, measured here:
    the worker is this process, the game the process its answer names (or this one, in-process)."""
    answer = dict(answer or {})
    worker_pid = os.getpid()
    worker = sampler.process(worker_pid)
    game_of = answer.get("game") if isinstance(answer.get("game"), dict) else None
    game = None
    if game_of is not None and isinstance(game_of.get("pid"), int):
        if game_of["pid"] == worker_pid:  # the simulator: one process (a second read would skew its CPU %)
            game = {**worker, "in_process": True}
        else:
            game = {**sampler.process(game_of["pid"]), "in_process": False}
    recorder = answer.get("recorder") if isinstance(answer.get("recorder"), dict) else {}
    lateness = answer.get("apply_lateness_ms")
    return {
        "schema": SCHEMA,
        "time": time.time(),
        "host": sampler.machine(),
        "worker": worker,
        "game": game,
        "recorder": {
            "encoder_lag_ms": recorder.get("encoder_lag_ms"),
            "dropped_frames": recorder.get("dropped_frames"),
        },
        "apply_lateness_ms": lateness if isinstance(lateness, dict) else None,
        "gpu": gpu(),
        "reported": answer,
    }


def is_report(answer: dict) -> bool:
    """Whether a worker's telemetry answer is a whole report already (a station measures its own)."""
    return isinstance(answer, dict) and answer.get("schema") == SCHEMA and "host" in answer


class Telemetry:
    """Reports of one worker: a station's answers as they come, a local worker's measured here."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.sampler = HostSampler()

    def sample(self) -> dict[str, Any]:
        answer = self.worker.telemetry()
        return answer if is_report(answer) else report(answer, self.sampler)


# --- the command --------------------------------------------------------------------------------------


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
        from hoi4_arena.cluster.station import open_peer

        worker = open_peer(config.peer, config.peers, observer=True)
    else:
        from hoi4_arena.screen.layout import ViewLayout
        from hoi4_arena.screen.probe import open_worker

        worker = open_worker(
            config.game,
            window=config.window,
            display=config.display,
            layout=ViewLayout.named(config.layout),
            sim=config.sim,
        )
    try:
        worker.attach()
    except BaseException:
        worker.close()
        raise
    return worker


def run_telemetry(config: TelemetryConfig, out=None) -> list[dict[str, Any]]:
    """The `telemetry` command: samples `--interval` apart; JSON on `out` (stdout), or a live table.

    Returns the samples it showed (the last one for a single report)."""
    import json
    import sys

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
