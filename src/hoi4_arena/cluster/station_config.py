"""The settings of `hoi4-arena serve-worker`, `bundle-peer` and `probe-peer` (numpy- and torch-free:
the command line builds their options from these fields).

Try: hoi4-arena serve-worker --help
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from hoi4_arena.errors import UserError
from hoi4_arena.screen.probe_config import WorkerChoice

DEFAULT_PORT = 7821


def parse_listen(text: str) -> tuple[str, int]:
    """'HOST:PORT' (IPv6 as [::1]:PORT) -> (host, port); UserError otherwise."""
    host, sep, port = str(text).rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UserError(f"--listen takes HOST:PORT such as 127.0.0.1:{DEFAULT_PORT}, not {text!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(kw_only=True)
class ServeWorkerConfig(WorkerChoice):
    """Settings of `hoi4-arena serve-worker`."""

    bundle: Path
    """The station bundle folder that `bundle-peer` made (cert.pem, key.pem, station.json)."""
    listen: str = f"127.0.0.1:{DEFAULT_PORT}"
    """HOST:PORT to listen on (loopback unless --allow-remote)."""
    allow_remote: bool = False
    """Listen on an address other than loopback (anyone who reaches it may try the token)."""
    message_timeout: float = 10.0
    """Seconds a started request has to arrive whole before its connection is closed."""
    attach_timeout: float = 5.0
    """Seconds a new connection has to finish TLS and send its whole attach before it is closed."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.bundle = Path(self.bundle)
        host, _ = parse_listen(self.listen)
        if not is_loopback(host) and not self.allow_remote:
            raise UserError(
                f"--listen {self.listen} is not a loopback address; add --allow-remote to listen on the network"
            )
        if not 0 < self.message_timeout <= 600:
            raise UserError(f"--message-timeout must be in (0, 600] seconds, not {self.message_timeout}")
        if not 0 < self.attach_timeout <= 60:
            raise UserError(f"--attach-timeout must be in (0, 60] seconds, not {self.attach_timeout}")


@dataclass(kw_only=True)
class BundlePeerConfig:
    """Settings of `hoi4-arena bundle-peer`."""

    name: str
    """The peer's name (what --peer and probe-peer take)."""
    out: Path
    """New folder for the station bundle (copy it to the game machine)."""
    host: str = "127.0.0.1"
    """The address clients dial to reach the station."""
    port: int = DEFAULT_PORT
    """The port the station listens on."""
    peers: Path | None = None
    """Peers file to add the client entry to (default: $HOI4_ARENA_PEERS, else ~/.config/hoi4-arena/peers.json)."""

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise UserError(f"--port must be in 1..65535, not {self.port}")


@dataclass(kw_only=True)
class ProbePeerConfig:
    """Settings of `hoi4-arena probe-peer`."""

    name: str
    """The peer's name in the peers file."""
    peers: Path | None = None
    """Peers file (default: $HOI4_ARENA_PEERS, else ~/.config/hoi4-arena/peers.json)."""
    captures: int = 10
    """How many round trips and captures with views to time."""
    observer: bool = False
    """Attach read-only (works while another client drives the station)."""

    def __post_init__(self) -> None:
        if not 1 <= self.captures <= 10_000:
            raise UserError(f"--captures must be between 1 and 10000, not {self.captures}")


CLUSTER_ACTIONS = ("status", "drain", "undrain")


@dataclass
class ClusterConfig:
    """Settings of `hoi4-arena cluster`."""

    action: str
    """status: the Ray cluster's nodes (id, name, alive, CPUs, station, drained) and its busy CPUs, as
    JSON; drain NAME: that station finishes the games it plays and gets no new ones (hoi4-arena's games:
    window and headless); undrain NAME: it gets games again."""
    name: str | None = None
    """With drain and undrain: the node, by its name or the start of its node id as `cluster status`
    shows them (`ray start --node-name NAME` names a node)."""
    ray: str = "auto"
    """The cluster: auto (the one this machine is part of), local (one started for the command) or a
    head's HOST:PORT."""

    def __post_init__(self) -> None:
        if self.action not in CLUSTER_ACTIONS:
            raise UserError(
                f"cluster ACTION must be one of {', '.join(CLUSTER_ACTIONS)}, not {self.action!r}"
            )
        if self.action == "status" and self.name is not None:
            raise UserError(f"cluster status takes no NAME, not {self.name!r}")
        if self.action != "status" and self.name is None:
            raise UserError(
                f"cluster {self.action} needs a node's NAME (`hoi4-arena cluster status` lists them)"
            )
