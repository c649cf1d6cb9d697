"""Helpers of the station tests (tests/cluster/test_station*.py): what a station applied, and an attached
client that waits, bounded, for the station to see the previous full connection gone."""

from __future__ import annotations

import time

from hoi4_arena.cluster.peers import Peer
from hoi4_arena.cluster.station import PeerClient, Station, connect
from hoi4_arena.screen.worker import WorkerError


def applied(station: Station) -> int:
    return station.worker.telemetry()["applied"]


def attached(peer: Peer, observer: bool = False) -> PeerClient:
    """An attached client; a full one waits (bounded) for the station to notice the previous one left:
    the slot is free once the server has seen that connection end, a moment after the client closed."""
    for _ in range(100):
        client = connect(peer, observer=observer)
        try:
            client.attach()
            return client
        except WorkerError as error:
            client.close()
            if error.code != "worker_busy":
                raise
        time.sleep(0.05)
    raise AssertionError("the full connection's slot never came free")
