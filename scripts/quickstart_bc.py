"""train-bc with the quickstart's settings on any data folder, for a fixed number of steps (docs/training.md).

    python scripts/quickstart_bc.py DATA OUT STEPS SOURCES [IDM_WEIGHT]


The quickstart's policy widths and train-bc settings (`quickstart.BC_SETTINGS`, `SMALL_POLICY`), seed 0,
the learning rate cosine-decayed over STEPS, one torch thread and one decoding worker; SOURCES as
train-bc's --sources (e.g. scripted, or scripted,idm for IDM-labelled sessions too); IDM_WEIGHT as
train-bc's --idm-weight (1 by default). Prints train-bc's summary as JSON.

Try: .venv/bin/python scripts/quickstart_bc.py runs/demos runs/bc 1500 scripted
"""

from __future__ import annotations

import json
import sys

from hoi4_arena.errors import UserError
from hoi4_arena.quickstart import BC_SETTINGS, SMALL_POLICY
from hoi4_arena.training.bc import train_bc
from hoi4_arena.training.bc_config import BCConfig


def main() -> None:
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    data, out, steps, sources = sys.argv[1], sys.argv[2], int(sys.argv[3]), tuple(sys.argv[4].split(","))
    idm_weight = float(sys.argv[5]) if len(sys.argv) == 6 else 1.0
    try:
        config = BCConfig(
            data=data,
            out=out,
            epochs=1000,
            seed=0,
            threads=1,
            workers=1,
            save_every=60.0,
            sources=sources,
            max_steps=steps,
            lr_decay_steps=steps,
            idm_weight=idm_weight,
            **{**BC_SETTINGS, "policy": SMALL_POLICY},
        )
        print(json.dumps(train_bc(config), indent=1, default=str))
    except UserError as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":  # train-bc's decoding workers import this module again
    main()
