"""The project's scripts (scripts/*.py) loaded as modules, so a test can call their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as a fresh module (its `main` not run), registered under NAME while it loads
    (a dataclass there looks its module up by name)."""
    if str(SCRIPTS) not in sys.path:  # a script imports its siblings, as when Python runs it
        sys.path.append(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
