"""Drained nodes of a Ray cluster (`hoi4-arena cluster drain NAME`): a drained station finishes the games
it is playing and takes no new ones; `cluster undrain NAME` gives it games again.

The drained nodes are a small named, detached actor on the head node (`BOOK` in namespace `NAMESPACE`)
that holds their node ids. `RayGames` reads it before it places each game (`placement`): a window game
goes to a station that is alive, not drained and has a free `hoi4_station` unit (node affinity, so the
driver knows which station each game holds), a headless game to any node that is not drained (a label
selector on `ray.io/node-id`). A game already running is never touched: it ends and comes back as usual.
A node restarted gets a new node id, and so is no longer drained. Only hoi4-arena's games consult the
book: other Ray work, and train-ppo's rollout actors (placed once, at the start), are not moved.

Why not Ray's own drain (`GcsClient.drain_node`, the hidden `ray drain-node`): a raylet drained that way
exits as soon as it is idle, and the finished game's session, which stays in that node's object store
until the driver takes it (in plan order), goes with it: `ray.get` raises ObjectReconstructionFailedError
(measured on ray 2.60 with a 3 MB result). It cannot be undone either, short of restarting the node.

Try: hoi4-arena cluster status; hoi4-arena cluster drain gaming-pc; hoi4-arena cluster undrain gaming-pc
"""

from __future__ import annotations

import time
from typing import Any

from hoi4_arena.errors import UserError

STATION = "hoi4_station"
"""The custom resource of a node that can show a game's window (a station): `ray start --resources
'{"hoi4_station": 1}'`; each unit plays one window game at a time."""

NAMESPACE = "hoi4_arena"
BOOK = "drained_nodes"
HEAD = "node:__internal_head__"
"""The resource only Ray's head node has: the book lives there, so losing a station does not lose it."""


class DrainBook:
    """The actor's state: node id (hex) -> when it was drained (Unix seconds)."""

    def __init__(self) -> None:
        self.nodes: dict[str, float] = {}

    def drain(self, node_id: str) -> None:
        self.nodes.setdefault(node_id, time.time())

    def undrain(self, node_id: str) -> bool:
        return self.nodes.pop(node_id, None) is not None

    def drained(self) -> dict[str, float]:
        return dict(self.nodes)


def drained_nodes(ray: Any) -> set[str]:
    """The node ids drained now (none while nobody has drained a node: reading creates no actor)."""
    try:
        book = ray.get_actor(BOOK, namespace=NAMESPACE)
    except ValueError:
        return set()
    return set(ray.get(book.drained.remote()))


def _book(ray: Any) -> Any:
    actor = ray.remote(num_cpus=0, resources={HEAD: 0.001})(DrainBook)
    return actor.options(name=BOOK, namespace=NAMESPACE, lifetime="detached", get_if_exists=True).remote()


def find_node(ray: Any, name: str, command: str) -> dict[str, Any]:
    """The alive node `name` means: its node name (`ray start --node-name`, else its IP) or the start of
    its node id (as `cluster status` lists both); a one-line UserError when none or several match."""
    alive = [node for node in ray.nodes() if node.get("Alive")]
    matches = [node for node in alive if node.get("NodeName") == name]
    if not matches and len(name) >= 4:
        matches = [node for node in alive if node["NodeID"].startswith(name.lower())]
    if not matches:
        names = ", ".join(sorted({str(node.get("NodeName")) for node in alive})) or "none"
        raise UserError(
            f"{command} {name}: no alive node of the cluster has that name or node id "
            f"(names: {names}; `hoi4-arena cluster status` lists them)"
        )
    if len(matches) > 1:
        ids = ", ".join(node["NodeID"][:12] for node in matches)
        raise UserError(f"{command} {name}: {len(matches)} nodes have that name; give a node id ({ids})")
    return matches[0]


def drain(ray: Any, name: str, undo: bool = False) -> dict[str, Any]:
    """Drain (or, with `undo`, undrain) the node `name` of the connected cluster; what was done."""
    command = "cluster undrain" if undo else "cluster drain"
    node = find_node(ray, name, command)
    node_id = node["NodeID"]
    if undo:
        try:
            book = ray.get_actor(BOOK, namespace=NAMESPACE)
            changed = ray.get(book.undrain.remote(node_id))
        except ValueError:
            changed = False
    else:
        changed = node_id not in drained_nodes(ray)
        ray.get(_book(ray).drain.remote(node_id))
    return {
        "node": node_id[:12],
        "name": node.get("NodeName"),
        "station": node.get("Resources", {}).get(STATION, 0) > 0,
        "drained": not undo,
        "changed": bool(changed),
    }
