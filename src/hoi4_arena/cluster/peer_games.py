"""A run's games on a station: `play-policy --peer NAME`, `record-ai --peer NAME`, `train-ppo --peer NAME`.

`PeerGames.connect(name, peers)` attaches to the station as its one full connection, for the whole
run, and refuses (UserError, before the run writes anything) a station that cannot start games (an
X11 window: HOI4's). Each planned game is then `new_game` with the plan's settings (arena, seed,
side, size, layout, max days, the AI) and is played through the station's worker exactly as a local
headless game (`runner.game_workers` hands `open(plan)` to the runner; train-ppo's rollout game calls
`start` for each game of its one slot, `play/rollout_game.py`). The station's answer, and the
worker's own attach, must name the game asked for: a station that shows another is a UserError, never
a results row.

Try: hoi4-arena serve-worker --game sim --bundle /tmp/local-station &
     HOI4_ARENA_PEERS=/tmp/peers.json hoi4-arena play-policy random runs/peer --games 2 --max-days 10 --peer local
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hoi4_arena.cluster.station import CommandPeerClient, open_peer
from hoi4_arena.errors import UserError
from hoi4_arena.maps.specs import parse_entry
from hoi4_arena.screen.layout import LAYOUTS, ViewLayout
from hoi4_arena.screen.worker import Worker, WorkerError


def check_peer_maps(specs: list[str]) -> None:
    """Refuse maps a station cannot open by name: a map folder is a path on this machine. Presets,
    preset:seed and preset:A-B (`maps/specs.py`) pass: each game's map is named to the station."""
    for spec in specs:
        if parse_entry(spec).kind == "folder":
            raise UserError(
                f"--peer plays presets (preset, preset:seed or preset:A-B), not the map folder {spec!r}: "
                "a folder is a path on this machine, not the station's"
            )


def check_served(name: str, asked: dict[str, Any], answer: dict[str, Any], layout_version: str) -> None:
    """UserError unless the station's answer to new_game (`served`, and its worker's own attach: seed,
    side, size, the views' layout) is the game asked for."""
    served = answer.get("served") or {}
    wrong = [
        f"{key} {served.get(key)!r} (asked {value!r})"
        for key, value in asked.items()
        if served.get(key) != value
    ]
    seen = {"seed": asked["seed"], "player": asked["player"], "size": asked["size"], "layout": layout_version}
    wrong += [
        f"its worker's {key} {answer.get(key)!r} (asked {v!r})"
        for key, v in seen.items()
        if answer.get(key) != v
    ]
    if wrong:
        raise UserError(f"station {name} shows another game than asked: {', '.join(wrong)}")


class _StationGame(AbstractContextManager):
    """One game on the station: the client for the game; leaving it releases input, not the connection."""

    def __init__(self, client: CommandPeerClient) -> None:
        self.client = client

    def __enter__(self) -> Worker:
        return self.client

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(WorkerError):
            self.client.release()


class PeerGames:
    """A station held for a run of games (see the module docstring); a context manager that closes the
    connection."""

    def __init__(self, name: str, client: CommandPeerClient) -> None:
        self.name = name
        self.client = client
        self.games = 0
        """Games this run started on the station."""

    @classmethod
    def connect(cls, name: str, peers: str | Path | None = None) -> PeerGames:
        client = open_peer(name, peers)
        try:
            info = client.attach()
            if not (info.get("served") or {}).get("restartable"):
                raise UserError(
                    f"station {name} cannot start new games (it serves {info.get('game', 'a game')!r}: "
                    "an X11 window); --peer needs a station of simulator games (serve-worker --game sim)"
                )
        except BaseException:
            client.close()
            raise
        return cls(name, client)

    def __enter__(self) -> PeerGames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def start(
        self,
        what: str,
        spec: str,
        seed: int,
        side: str,
        *,
        size: tuple[int, int],
        layout: ViewLayout,
        ai: dict[str, float],
        max_days: int,
        player_kind: str | None,
    ) -> CommandPeerClient:
        """Start a game on the station with new_game (`size` is (height, width)) and return its worker,
        the run's client; a UserError when the station refuses (`what` names the game) or its answer
        names another game."""
        height, width = size
        # A registered layout by its name; any other (a checkpoint's own) in full.
        named = layout.name in LAYOUTS and LAYOUTS[layout.name] == layout
        asked = {
            "arena": spec,
            "seed": seed,
            "size": [width, height],
            "layout": layout.name if named else layout.to_dict(),
            "player": side,
            "ai": ai,
            "max_days": max_days,
            "player_kind": player_kind,
        }
        try:
            answer = self.client.new_game(asked)
        except WorkerError as error:
            raise UserError(
                f"station {self.name} did not start {what}: {error.code}: {error.message}"
            ) from None
        check_served(self.name, asked, answer, layout.version)
        self.games += 1
        return self.client

    @contextlib.contextmanager
    def workers(
        self,
        size: tuple[int, int],
        layout: ViewLayout,
        *,
        max_days: int,
        ai_of: Callable[[str], dict[str, float]],
        player_kind: str | None,
    ) -> Iterator[Callable[[Any], AbstractContextManager[Worker]]]:
        """`runner.game_workers`'s factory on the station: `open(plan)` starts the plan's game there."""

        def open_game(plan: Any) -> AbstractContextManager[Worker]:
            client = self.start(
                f"game {plan.index}",
                plan.spec,
                plan.seed,
                plan.side,
                size=size,
                layout=layout,
                ai=ai_of(plan.side),
                max_days=max_days,
                player_kind=player_kind,
            )
            return _StationGame(client)

        yield open_game
