__version__ = "0.1.0"

# `gymnasium.make("hoi4_arena/Sim-v0")` after a plain `import hoi4_arena` (Gymnasium is not imported here).
from hoi4_arena.screen.registration import install as _install_envs

_install_envs()
