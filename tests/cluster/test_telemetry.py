"""Telemetry: the report of a simulator worker measured here, a station's report over TLS to an observer
(who still may not apply), NVML read through a stand-in module, and the command's JSON and table."""

from __future__ import annotations

import io
import json
import os
import sys
import types

import pytest

from hoi4_arena.cluster import telemetry as telemetry_module
from hoi4_arena.cluster.peers import Peer, load_bundle, make_bundle, read_peers
from hoi4_arena.cluster.station import Station, connect
from hoi4_arena.cluster.telemetry import HostSampler, Telemetry, is_report, report
from hoi4_arena.cluster.watch import run_telemetry
from hoi4_arena.cluster.watch_config import TelemetryConfig
from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import WorkerError

KEY_A = InputEvent(0, "key_down", 1, 1, key=0x41, source="policy")


@pytest.fixture(autouse=True)
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """No pynvml here, whatever the machine has installed: a stand-in module is set where a test wants one."""
    monkeypatch.setitem(sys.modules, "pynvml", None)


def check_report(sample: dict, *, rates: bool) -> None:
    """The fields of a report, with values a machine can have."""
    assert sample["schema"] == 1 and is_report(sample)
    host = sample["host"]
    assert host["cpu_count"] >= 1 and host["name"]
    assert 0 < host["memory"]["used_mb"] <= host["memory"]["total_mb"]
    assert 0 <= host["memory"]["percent"] <= 100
    assert 0 < host["disk"]["used_gb"] <= host["disk"]["total_gb"]
    assert host["network"]["sent_mb"] >= 0 and host["network"]["recv_mb"] >= 0
    worker = sample["worker"]
    assert worker["pid"] == os.getpid() and worker["running"] is True
    assert worker["rss_mb"] > 10 and worker["threads"] >= 1
    if rates:
        assert 0 <= host["cpu_percent"] <= 100
        assert host["network"]["sent_kbps"] >= 0 and host["network"]["recv_kbps"] >= 0
        assert worker["cpu_percent"] >= 0
    else:
        assert host["cpu_percent"] is None and worker["cpu_percent"] is None
    game = sample["game"]
    assert game["in_process"] is True and game["pid"] == os.getpid()  # the simulator runs in its worker
    assert sample["recorder"] == {"encoder_lag_ms": None, "dropped_frames": None}  # no recorder here
    assert sample["gpu"] is None


def test_a_sim_workers_report_has_every_field_and_lateness_once_it_applied() -> None:
    with SimWorker(size=(180, 320), layout="cpu") as worker:
        worker.attach()
        sampler = HostSampler()
        first = report(worker.telemetry(), sampler)
        check_report(first, rates=False)
        assert first["apply_lateness_ms"]["count"] == 0 and first["apply_lateness_ms"]["p50"] is None
        worker.arm("setup")
        t0 = worker.now_ns()
        up = InputEvent(t0 + 50_000_000, "key_up", 1, 1, key=0x41, source="policy")
        worker.apply(
            [InputEvent(t0 + 25_000_000, "key_down", 1, 1, key=0x41, source="policy"), up], timed=True
        )
        worker.wait_until(t0 + 200_000_000)
        second = report(worker.telemetry(), sampler)
        check_report(second, rates=True)
        lateness = second["apply_lateness_ms"]
        assert lateness["count"] == 2 and lateness["max"] == 0.0  # the virtual clock is never late
        assert second["reported"]["applied"] == 2 and second["reported"]["virtual_s"] == pytest.approx(0.2)


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("telemetry")
    make_bundle("watched", root / "bundle", peers=root / "peers.json")
    return load_bundle(root / "bundle"), read_peers(root / "peers.json")["watched"], root


@pytest.fixture
def station(identity):
    bundle, _, _ = identity
    running = Station(SimWorker(size=(180, 320), layout="cpu"), bundle, "127.0.0.1", 0).start()
    yield running
    running.stop()


@pytest.fixture
def peer(identity, station: Station) -> Peer:
    _, entry, _ = identity
    return Peer("watched", "127.0.0.1", station.address[1], entry.fingerprint, entry.token)


def test_an_observer_reads_the_stations_report_over_tls_and_still_may_not_apply(
    station: Station, peer: Peer
) -> None:
    watcher = connect(peer, observer=True)
    try:
        assert watcher.attach()["observer"] is True
        assert watcher.sock.version() == "TLSv1.3"
        first = watcher.telemetry()
        check_report(first, rates=False)  # measured by the station (here: this process)
        second = Telemetry(watcher).sample()  # a station's answer is the report itself
        check_report(second, rates=True)
        assert second["reported"]["captures"] == 0
        for op, params in (("apply", {"events": [KEY_A.to_dict()]}), ("arm", {"mode": "setup"})):
            with pytest.raises(WorkerError, match="observer"):
                watcher.request(op, **params)
        assert watcher.status()["armed"] is None
    finally:
        watcher.close()
    assert station.worker.telemetry()["applied"] == 0


class FakeNVML(types.ModuleType):
    """pynvml's calls that telemetry makes, for one GPU."""

    NVML_TEMPERATURE_GPU = 0

    def __init__(self) -> None:
        super().__init__("pynvml")
        self.shut = False

    def nvmlInit(self) -> None: ...

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetName(self, handle: str) -> bytes:
        return b"NVIDIA Test 9000"

    def nvmlDeviceGetMemoryInfo(self, handle: str):
        return types.SimpleNamespace(used=3 * 2**30, total=24 * 2**30)

    def nvmlDeviceGetUtilizationRates(self, handle: str):
        return types.SimpleNamespace(gpu=42)

    def nvmlDeviceGetTemperature(self, handle: str, sensor: int) -> int:
        return 61


def test_the_gpu_is_read_through_nvml_when_it_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    assert telemetry_module.gpu() is None  # no pynvml
    fake = FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert telemetry_module.gpu() == [
        {
            "index": 0,
            "name": "NVIDIA Test 9000",
            "util_percent": 42,
            "memory_used_mb": 3072.0,
            "memory_total_mb": 24576.0,
            "temperature_c": 61,
        }
    ]
    assert fake.shut

    def no_driver() -> None:
        raise RuntimeError("NVML Shared Library Not Found")

    monkeypatch.setattr(fake, "nvmlInit", no_driver)
    assert telemetry_module.gpu() is None


def test_the_command_prints_json_samples_for_a_sim_game() -> None:
    out = io.StringIO()
    config = TelemetryConfig(game="sim", size=(180, 320), layout="cpu", interval=0.05, count=2)
    run_telemetry(config, out=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    for line in lines:
        check_report(json.loads(line), rates=True)


def test_the_command_reads_a_peer_and_watches_in_a_table(station: Station, peer: Peer, tmp_path) -> None:
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps({"peers": {"watched": peer.to_dict()}}))
    out = io.StringIO()
    one = run_telemetry(TelemetryConfig(peer="watched", peers=peers, interval=0.05), out=out)
    check_report(json.loads(out.getvalue()), rates=True)
    assert len(one) == 1
    out = io.StringIO()
    config = TelemetryConfig(peer="watched", peers=peers, interval=0.05, watch=True, count=3)
    shown = run_telemetry(config, out=out)
    table = out.getvalue()
    assert "telemetry: peer watched" in table and "worker memory" in table and "none seen (NVML)" in table
    check_report(shown[-1], rates=True)
    assert station.connections["accepted"] == 2 and station.worker.telemetry()["applied"] == 0


def test_peer_and_sim_game_are_one_or_the_other() -> None:
    with pytest.raises(UserError, match="--peer"):
        TelemetryConfig(peer="watched", game="sim")
    with pytest.raises(UserError, match="--interval"):
        TelemetryConfig(game="sim", interval=0)
