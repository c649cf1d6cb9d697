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

The `telemetry` command that shows them is `watch.py`.

Try: hoi4-arena telemetry --game sim --size 320x180
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from typing import Any

import psutil

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
