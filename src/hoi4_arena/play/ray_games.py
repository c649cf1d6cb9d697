"""A run's games as Ray tasks (`--ray` on record-ai, play-policy, evaluate and collect-pair): headless games
on any node of a Ray cluster, their rows and sessions written by the driver into OUT exactly as the local
loop writes them.

Each game is one task (one CPU, never retried): it plays `runner.play_one` into a temporary folder on
its node and returns the game's record and its session folder's files (bytes); the driver takes the
results in plan order, writes each session into OUT/<session id> and appends the row. So a Ray run and a
local run of the same settings give the same rows and byte-identical sessions, whatever the nodes. A pair
game (collect-pair's: one world, both sides' players) is a task the same way, its game function
`play.pair.play_pair_task`: its folder (both sessions, the worker logs, the game's manifest) comes back
as a session does, its two rows with it.

The `--minutes` budget stays exact: a task starts with the budget left by the games finished so far (an
upper bound, since earlier games may still be running); when its turn comes in plan order the budget
left is known, and a game that was not cut and ended inside it is the game the local loop would have
played; one that ran past it is played again with the exact budget, and once the budget is spent the
games still in flight are dropped. A task whose worker died (killed, out of memory, its node lost) makes
its game invalid with reason `ray: ...`; the run goes on, and a resumed run skips it like any finished
game.

A window game (`--game x11`: the simulator's window under a private Xvfb) needs a screen, so it runs only
on a station: a node started with the `hoi4_station` custom resource (`ray start --resources
'{"hoi4_station": 1}'`), one window game at a time per unit, placed by the driver on a station that is
alive, not drained (`cluster drain NAME`, `cluster/drain.py`) and has a unit free; when every station is
drained or gone, the run starts no more games, lets the ones in flight finish and ends (re-run to resume),
and a run that finds no station at all is refused before it writes anything. Headless games go to any
node that is not drained. The summary's `ray.placed` says which node (its id as `cluster status` shows it)
played each game.

`--ray local` starts a Ray instance on this machine for the run (all its CPUs) and stops it at the end;
`--ray auto` joins the cluster this machine belongs to (`ray start --head` / `ray start --address ...`);
`--ray HOST:PORT` joins that cluster's head. Every node needs this package installed (pip install
'hoi4-arena[cluster]'). A driver already connected to Ray (a test, a notebook) keeps its connection.

Try: hoi4-arena record-ai runs/ray --games 8 --max-days 30 --ray local
"""

from __future__ import annotations

import collections
import logging
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hoi4_arena import allocator
from hoi4_arena.cluster.drain import STATION, drain, drained_nodes
from hoi4_arena.errors import UserError
from hoi4_arena.scratch import scratch_folder
from hoi4_arena.screen.game import GameRecord

log = logging.getLogger(__name__)

LOCAL = "local"
AUTO = "auto"
INSTALL = "pip install 'hoi4-arena[cluster]'"


def play_remote(
    game: Callable[..., Any], run: Any, plan: Any, left: int | None
) -> tuple[Any, dict[str, bytes], str]:
    """One game in a Ray task: `game(run, plan, folder, left)`'s record, played into a temporary folder of
    this node, the files of its `session` there (path relative to the session -> bytes), and this node's
    id."""
    import ray

    with scratch_folder("ray") as tmp:
        record = game(run, plan, Path(tmp), left)
        folder = Path(tmp) / record.session if record.session is not None else None
        files = {}
        if folder is not None and folder.is_dir():
            files = {
                str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
            }
    return record, files, ray.get_runtime_context().get_node_id()


def write_session(folder: Path, files: dict[str, bytes]) -> None:
    """A task's session files into `folder`, replacing an unfinished one there."""
    from hoi4_arena.sessions.lock import remove_unfinished

    remove_unfinished(folder)
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError(f"--ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


def _probe(address: str) -> None:
    """Refuse a HOST:PORT nothing listens on now, rather than let Ray retry it for a minute."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise UserError(f"--ray takes auto, local or HOST:PORT (a Ray head's address), not {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as error:
        raise UserError(
            f"--ray {address}: no Ray cluster answers there ({error}); start one with `ray start --head`, "
            "or give --ray local"
        ) from None


class RayGames:
    """A run's connection to Ray and the loop that plays its games as tasks (`play`)."""

    def __init__(self, ray: Any, games: int, owned: bool, window: bool = False) -> None:
        self.ray = ray
        self.games = games
        self.owned = owned
        self.window = window
        """The games need a screen: each goes to a station."""
        self.placed: dict[int, str] = {}
        """Game index -> the id of the node that played it (as `cluster status` shows it)."""
        self.stopped: str | None = None
        """Why the run started no more games before its end (no station takes games), or None."""

    @classmethod
    def connect(cls, address: str, games: int = 0, window: bool = False) -> RayGames:
        """Join (or, for `local`, start) the cluster; at most `games` games in flight (0: its CPUs);
        `window`: the games need a screen (refused now when no station takes games)."""
        if isinstance(games, bool) or not isinstance(games, int) or games < 0:
            raise UserError(f"--ray-games must be a whole number >= 0, not {games!r}")
        if address not in (LOCAL, AUTO) and not address.startswith("ray://"):
            _probe(address)
        ray = _import_ray()
        owned = False
        if not ray.is_initialized():
            # The run's workers start with this process's malloc limits (allocator.py): a task plays
            # its game in a thread of Ray's, which without them touches fresh pages for every frame.
            options: dict[str, Any] = {
                "log_to_driver": False,
                "logging_level": logging.WARNING,
                "runtime_env": {"env_vars": allocator.environment()},
            }
            try:
                if address == LOCAL:
                    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, **options)
                else:
                    ray.init(address=address, **options)
            except (ConnectionError, RuntimeError) as error:
                raise UserError(f"--ray {address}: could not join a Ray cluster ({error})") from None
            owned = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        connected = cls(ray, games or max(cpus, 1), owned, window)
        if window and not connected.stations():
            connected.__exit__()  # a Ray started for the run stops again
            raise UserError(f"--ray {address}: {connected.no_station()}")
        return connected

    def stations(self) -> dict[str, int]:
        """The stations that take window games now: node id -> its `hoi4_station` units."""
        drained = drained_nodes(self.ray)
        return {
            node["NodeID"]: int(node["Resources"][STATION])
            for node in self.ray.nodes()
            if node.get("Alive")
            and node.get("Resources", {}).get(STATION, 0) >= 1
            and node["NodeID"] not in drained
        }

    def no_station(self) -> str:
        return (
            "no station takes window games (--game x11 needs a node started with "
            "--resources '{\"hoi4_station\": 1}' that is not drained: `hoi4-arena cluster status`)"
        )

    def placement(self, holding: collections.Counter[str]) -> tuple[str | None, dict[str, Any]] | None:
        """The station and Ray options of the next game: a window game on a station with a unit free that
        this run does not hold (`holding`: node id -> its games in flight), None when every such unit is
        taken; a headless game anywhere but on a drained node. Sets `stopped` when no station takes
        games."""
        if not self.window:
            drained = drained_nodes(self.ray)
            if not drained:
                return None, {}
            return None, {"label_selector": {"ray.io/node-id": f"!in({','.join(sorted(drained))})"}}
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        stations = self.stations()
        if not stations:
            self.stopped = self.no_station()
            return None
        node, free = max(((n, units - holding[n]) for n, units in stations.items()), key=lambda x: x[1])
        if free <= 0:
            return None
        return node, {
            "resources": {STATION: 1},
            "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False),
        }

    def __enter__(self) -> RayGames:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.ray.shutdown()

    def play(
        self,
        run: Any,
        out: Path,
        pending: Iterator[int],
        budget_left: Callable[[], int | None],
        wall_out: Callable[[], bool],
        finished: Callable[[Any, Any], None],
        game: Callable[..., Any],
        bar: Any = None,
    ) -> bool:
        """Play the `pending` games (indices in plan order) as tasks, `finished(plan, record)` for each in
        plan order, its session already in OUT; True when interrupted (Ctrl+C).

        `game(run, plan, folder, left)` plays `run.plan(index)` in the task into `folder` with `left` of
        the budget and returns its record: anything with `session` (the folder under `folder` that comes
        back to OUT, or None), `reason` and `play_ns`: a one-player run's (`runner.play_one`) or
        collect-pair's (`play.pair.play_pair_task`). A task whose worker died is `finished` with an
        invalid `GameRecord` (reason `ray: ...`), whatever `game` returns. `bar`: the run's progress,
        told (`waiting(plan, in_flight)`) which game's result is awaited."""
        ray = self.ray
        task = ray.remote(num_cpus=1, max_retries=0)(play_remote)
        run_ref = ray.put(run)  # one copy of the run (its player's weights) for every task
        # (plan, budget hint, ref, the station it holds or None, its Ray options)
        flight: collections.deque[tuple[Any, int | None, Any, str | None, dict]] = collections.deque()
        holding: collections.Counter[str] = collections.Counter()
        submitting = True

        def submit() -> None:
            nonlocal submitting
            while submitting and len(flight) < self.games:
                placed = self.placement(holding)  # before a game is taken: a full station waits
                if placed is None:
                    submitting = self.stopped is None
                    return
                node, options = placed
                index = next(pending, None)
                left = budget_left()  # of the games finished so far: an upper bound of this game's
                if index is None or (left is not None and left <= 0) or wall_out():
                    submitting = False
                    return
                plan = run.plan(index)
                if node is not None:
                    holding[node] += 1
                ref = task.options(**options).remote(game, run_ref, plan, left)
                flight.append((plan, left, ref, node, options))

        try:
            submit()
            while flight:
                plan, hint, ref, node, options = flight.popleft()
                left = budget_left()  # exact now: every earlier game is finished
                if left is not None and left <= 0:
                    flight.appendleft((plan, hint, ref, node, options))  # cancelled below
                    break  # the local loop would not have started this game
                if bar is not None:
                    bar.waiting(plan, len(flight) + 1)
                record, files = self._result(plan, ref)
                if (
                    left is not None
                    and hint != left
                    and (record.reason.startswith("cut") or record.play_ns >= left)
                ):
                    # As the local loop cuts it, where it was placed (the station's unit is still held).
                    again = task.options(**options).remote(game, run_ref, plan, left)
                    record, files = self._result(plan, again)
                if node is not None:
                    holding[node] -= 1
                if record.session is not None:
                    write_session(out / record.session, files)
                finished(plan, record)
                submit()
        except KeyboardInterrupt:
            return True
        finally:
            for _, _, ref, _, _ in flight:
                ray.cancel(ref, force=True)
        if self.stopped:
            log.warning("--ray: %s; the run stops here (re-run it to resume)", self.stopped)
        return False

    def _result(self, plan: Any, ref: Any) -> tuple[Any, dict[str, bytes]]:
        """A task's record and files; a task whose worker died is an invalid game (`ray: ...`)."""
        ray = self.ray
        try:
            record, files, node = ray.get(ref)
            self.placed[plan.index] = node[:12]
            return record, files
        except ray.exceptions.RayTaskError as error:
            if isinstance(error.cause, UserError | KeyboardInterrupt):
                raise error.cause from None
            return GameRecord(valid=False, reason=f"ray: {_first_line(error)}"), {}
        except ray.exceptions.RayError as error:
            return GameRecord(valid=False, reason=f"ray: {type(error).__name__}: {_first_line(error)}"), {}


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def cluster_status(address: str) -> dict[str, Any]:
    """The nodes of the Ray cluster at `address` (auto, local or a head's HOST:PORT): each node's id and
    name (what `cluster drain` takes), address, whether it is alive, its CPUs, whether it is a station
    and whether it is drained, and how many CPUs are busy now (one a game or rollout worker)."""
    with RayGames.connect(address) as games:
        ray = games.ray
        drained = drained_nodes(ray)
        nodes = [
            {
                "node": node["NodeID"][:12],
                "name": node.get("NodeName"),
                "address": node.get("NodeManagerAddress"),
                "alive": bool(node.get("Alive")),
                "cpus": node.get("Resources", {}).get("CPU", 0),
                "station": node.get("Resources", {}).get(STATION, 0) > 0,
                "drained": node["NodeID"] in drained,
            }
            for node in ray.nodes()
        ]
        total = ray.cluster_resources()
        free = ray.available_resources()
        return {
            "ray": address,
            "nodes": nodes,
            "alive": sum(n["alive"] for n in nodes),
            "stations": sum(n["station"] and n["alive"] for n in nodes),
            "stations_open": sum(n["station"] and n["alive"] and not n["drained"] for n in nodes),
            "stations_busy": total.get(STATION, 0) - free.get(STATION, 0),
            "cpus": total.get("CPU", 0),
            "cpus_busy": total.get("CPU", 0) - free.get("CPU", 0),
        }


def drain_station(address: str, name: str, undo: bool = False) -> dict[str, Any]:
    """`cluster drain NAME` (or `undrain`) on the cluster at `address`: see `cluster/drain.py`."""
    with RayGames.connect(address) as games:
        return {"ray": address, **drain(games.ray, name, undo=undo)}
