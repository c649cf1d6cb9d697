"""Registering the env ids with Gymnasium on a plain `import hoi4_arena`, without importing Gymnasium.

`hoi4_arena/Sim-v0` (the env) and `hoi4_arena/SimFlat-v0` (the env with `env_wrappers.wrap`) are
registered by their entry-point strings, so registering imports neither the env nor the simulator.
Gymnasium itself is not imported either: `import hoi4_arena` stays light (the command line's
`--help` never loads numpy). If Gymnasium is already imported, the ids are registered at once;
otherwise a one-shot import hook registers them the moment Gymnasium finishes importing. Gymnasium
1.x has no plugin entry points any more (the `gymnasium.envs` entry-point group was dropped in 1.0),
so this is what makes

    import hoi4_arena, gymnasium
    env = gymnasium.make("hoi4_arena/Sim-v0")

work in either import order. `gymnasium.make("hoi4_arena.rl.env:hoi4_arena/Sim-v0")` also works
with no prior import at all.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

IDS = {
    "hoi4_arena/Sim-v0": "hoi4_arena.rl.env:SimEnv",
    "hoi4_arena/SimFlat-v0": "hoi4_arena.rl.env_wrappers:make_flat_env",
}


def register_envs() -> None:
    """Register every id with Gymnasium's registry (an id already there is left as it is)."""
    from gymnasium.envs.registration import register, registry

    for env_id, entry_point in IDS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point)


class _AfterGymnasium(importlib.abc.MetaPathFinder):
    """Finds Gymnasium through the other finders once, and registers the ids after its module ran."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "gymnasium":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # one shot: the search below must not come back here
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            register_envs()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Register now if Gymnasium is loaded, else when it is (called by `hoi4_arena/__init__.py`)."""
    if "gymnasium.envs.registration" in sys.modules:
        register_envs()
    elif "gymnasium" not in sys.modules and not any(isinstance(f, _AfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())
