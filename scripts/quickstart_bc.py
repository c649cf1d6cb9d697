"""train-bc with the quickstart's settings on any data folder, for a fixed number of steps (docs/training.md).

    python scripts/quickstart_bc.py [--pinned] DATA OUT STEPS SOURCES [FIELD=VALUE ...]

The quickstart's policy widths and train-bc settings (`quickstart.BC_SETTINGS`, `SMALL_POLICY`), seed 0,
the learning rate cosine-decayed over STEPS, one torch thread and one decoding worker; SOURCES as
train-bc's --sources (e.g. scripted, or scripted,idm for IDM-labelled sessions too). Each FIELD=VALUE
sets one more of train-bc's settings by its BCConfig name, the value read as JSON where it parses and as
text otherwise: idm_weight=0.25, rung=S3, init=runs/bc-s3/last.pt, skills=true. `--pinned` pins torch's
CPU numerics to AVX2 before torch loads, as the quickstart's own processes do (`numerics.pin_numerics`):
with it, DATA = a quickstart's demonstrations, STEPS 3000 and seed=K train the weights its training seed
K trains. Prints train-bc's summary as JSON.

Try: .venv/bin/python scripts/quickstart_bc.py runs/demos runs/bc 1500 scripted
     .venv/bin/python scripts/quickstart_bc.py runs/demos runs/bc-s3 500 scripted rung=S3
     .venv/bin/python scripts/quickstart_bc.py --pinned runs/scale/d384 runs/scale/d384/bc 3000 scripted seed=1
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.numerics import pin_numerics
from hoi4_arena.quickstart import BC_SETTINGS, SMALL_POLICY  # torch-free, as is bc_config
from hoi4_arena.training.bc_config import BCConfig


def overrides(pairs: list[str]) -> dict[str, Any]:
    """FIELD=VALUE arguments as BCConfig settings; an unknown field or a pair without `=` is refused."""
    fields = {field.name for field in dataclasses.fields(BCConfig)}
    settings: dict[str, Any] = {}
    for pair in pairs:
        name, equals, text = pair.partition("=")
        if not equals or name not in fields:
            raise UserError(f"{pair!r}: expected FIELD=VALUE with FIELD one of train-bc's settings")
        try:
            settings[name] = json.loads(text)
        except json.JSONDecodeError:
            settings[name] = text
    return settings


def main() -> None:
    args = sys.argv[1:]
    pinned = args[:1] == ["--pinned"]
    args = args[1:] if pinned else args
    if len(args) < 4 or not args[2].isdigit():
        sys.exit(__doc__)
    if pinned:
        pin_numerics()  # before train_bc imports torch
    from hoi4_arena.training.bc import train_bc

    data, out, steps, sources = args[0], args[1], int(args[2]), tuple(args[3].split(","))
    try:
        extra = overrides(args[4:])
        settings: dict[str, Any] = {
            "data": data,
            "out": out,
            "epochs": 1000,
            "seed": 0,
            "threads": 1,
            "workers": 1,
            "save_every": 60.0,
            "sources": sources,
            "max_steps": steps,
            "lr_decay_steps": steps,
            **BC_SETTINGS,
            "policy": SMALL_POLICY,
        }
        config = BCConfig(**{**settings, **extra})  # FIELD=VALUE wins, for any setting
        print(json.dumps(train_bc(config), indent=1, default=str))
    except UserError as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":  # train-bc's decoding workers import this module again
    main()
