"""Fixtures the station tests share: a station's identity (its bundle and the peers file's entry) and the
peer that reaches the module's `station` fixture (each module starts its station with its own timeouts).
The helpers they share are in stations.py."""

from __future__ import annotations

import pytest

from hoi4_arena.cluster.peers import Peer, load_bundle, make_bundle, read_peers
from hoi4_arena.cluster.station import Station


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory):
    """(bundle, peers-file entry, folder) of a station named `test`."""
    root = tmp_path_factory.mktemp("station")
    make_bundle("test", root / "bundle", peers=root / "peers.json")
    return load_bundle(root / "bundle"), read_peers(root / "peers.json")["test"], root


@pytest.fixture
def peer(identity, station: Station) -> Peer:
    _, entry, _ = identity
    return Peer("test", "127.0.0.1", station.address[1], entry.fingerprint, entry.token)
