"""Peers: a station's bundle (what the game machine keeps) and the client's peers file (what it dials).

`make_bundle(name, out)` makes a station's identity in one go:

    out/cert.pem       the station's self-signed certificate (EC P-256)
    out/key.pem        its private key (owner-only)
    out/station.json   {"name", "fingerprint", "token_sha256", "host", "port"}: the station keeps only a
                       hash of the token, so a copied bundle does not hand out the right to drive it

and writes the client's entry into the peers file, `{"peers": {NAME: {"host", "port", "fingerprint",
"token"}}}` (owner-only; `~/.config/hoi4-arena/peers.json`, or `$HOI4_ARENA_PEERS`, or an explicit
path). Copy `out/` to the game machine and run `hoi4-arena serve-worker --bundle out ...` there;
`hoi4-arena probe-peer NAME` here.

Try: hoi4-arena bundle-peer gaming-pc /tmp/gaming-pc --host 192.168.1.20 --peers /tmp/peers.json
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.cluster.station_config import DEFAULT_PORT
from hoi4_arena.cluster.tls import CERT_FILE, KEY_FILE, write_certificate
from hoi4_arena.errors import UserError

PEERS_ENV = "HOI4_ARENA_PEERS"
STATION_FILE = "station.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def peers_path(path: str | os.PathLike | None = None) -> Path:
    """The peers file: `path`, else $HOI4_ARENA_PEERS, else ~/.config/hoi4-arena/peers.json."""
    if path is not None:
        return Path(path).expanduser()
    if os.environ.get(PEERS_ENV):
        return Path(os.environ[PEERS_ENV]).expanduser()
    return Path.home() / ".config" / "hoi4-arena" / "peers.json"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Peer:
    """What a client needs to reach one station."""

    name: str
    host: str
    port: int
    fingerprint: str
    token: str

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "fingerprint": self.fingerprint, "token": self.token}


@dataclass(frozen=True)
class StationBundle:
    """What a station needs to serve: its folder (certificate and key) and the token's hash."""

    folder: Path
    name: str
    fingerprint: str
    token_sha256: str
    host: str
    port: int


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise UserError(f"a peer name is letters, digits, '.', '_' or '-' (at most 64), not {name!r}")
    return name


def _write_private_json(path: Path, data: dict) -> None:
    """Atomically replace `path` with `data`, readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=1)
        handle.write("\n")
    os.replace(tmp, path)


def read_peers(path: str | os.PathLike | None = None) -> dict[str, Peer]:
    """Every peer in the peers file ({} when there is none); a damaged file is a UserError."""
    file = peers_path(path)
    if not file.exists():
        return {}
    try:
        data = json.loads(file.read_text())
        peers = {}
        for name, entry in data["peers"].items():
            peers[name] = Peer(
                name, str(entry["host"]), int(entry["port"]), str(entry["fingerprint"]), str(entry["token"])
            )
        return peers
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise UserError(f"{file}: not a readable peers file ({error}); fix or remove it") from None


def find_peer(name: str, path: str | os.PathLike | None = None) -> Peer:
    peers = read_peers(path)
    if name not in peers:
        known = ", ".join(sorted(peers)) or "none"
        raise UserError(
            f"no peer {name!r} in {peers_path(path)} (known: {known}); make one with `hoi4-arena bundle-peer`"
        )
    return peers[name]


def make_bundle(
    name: str,
    out: str | os.PathLike,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    peers: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """A new station identity in `out` and its client entry in the peers file (see the module doc)."""
    check_name(name)
    if not 0 < int(port) < 65536:
        raise UserError(f"port must be in 1..65535, not {port}")
    folder = Path(out).expanduser()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UserError(f"{folder}: already exists and is not an empty folder; choose a new one")
    peers_file = peers_path(peers)
    existing = read_peers(peers_file)  # refuse a damaged peers file before making anything
    hosts = tuple(dict.fromkeys((host, "127.0.0.1", "localhost")))
    fingerprint = write_certificate(folder, name, hosts)
    token = secrets.token_urlsafe(32)
    bundle = {"name": name, "fingerprint": fingerprint, "token_sha256": token_hash(token), "host": host}
    bundle["port"] = int(port)
    _write_private_json(folder / STATION_FILE, bundle)
    existing[name] = Peer(name, host, int(port), fingerprint, token)
    _write_private_json(peers_file, {"peers": {n: p.to_dict() for n, p in sorted(existing.items())}})
    return {
        "name": name,
        "bundle": str(folder),
        "files": [CERT_FILE, KEY_FILE, STATION_FILE],
        "fingerprint": fingerprint,
        "peers_file": str(peers_file),
        "dial": f"{host}:{port}",
        "next": f"copy {folder} to the game machine; there: hoi4-arena serve-worker --bundle {folder.name} "
        f"--listen {host}:{port} ...; here: hoi4-arena probe-peer {name}",
    }


def load_bundle(folder: str | os.PathLike) -> StationBundle:
    """A station's bundle folder, checked (UserError with what is missing)."""
    path = Path(folder).expanduser()
    try:
        data = json.loads((path / STATION_FILE).read_text())
        bundle = StationBundle(
            path,
            str(data["name"]),
            str(data["fingerprint"]),
            str(data["token_sha256"]),
            str(data.get("host", "127.0.0.1")),
            int(data.get("port", DEFAULT_PORT)),
        )
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(
            f"{path}: not a station bundle ({error}); make one with `hoi4-arena bundle-peer NAME OUT`"
        ) from None
    for name in (CERT_FILE, KEY_FILE):
        if not (path / name).is_file():
            raise UserError(f"{path}: the bundle lacks {name}; make it anew with `hoi4-arena bundle-peer`")
    return bundle
