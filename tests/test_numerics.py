"""Pinned numerics: a short training gives the same weights whether the process would pick AVX-512 or AVX2
once the quickstart's pinning is on, and (on a CPU with AVX-512) different weights without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hoi4_arena.numerics import PINNED, cpu, numerics, pin_numerics, pinnable

# What a CPU without AVX-512 makes each library use (the most each one may pick on such a machine).
AVX2_ONLY = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}

# Three training steps of a narrow policy on one seeded random batch, in a fresh process (the libraries
# read their settings once, when they start): convolutions (oneDNN), linear layers (MKL), the GRU and
# the optimizer's updates (ATen's vectorised kernels). Prints the weights' hash and the numerics.
CHILD = """
import json, sys
from hoi4_arena.numerics import pin_numerics
state = pin_numerics() if sys.argv[1] == "pin" else None
import torch
from hoi4_arena.models.checkpoint import weights_sha256
from hoi4_arena.models.config import ActionSpace, PolicyConfig
from hoi4_arena.models.policy import Observation, Policy
from hoi4_arena.numerics import numerics
from hoi4_arena.training.run_control import adam

torch.set_num_threads(1)
torch.manual_seed(0)
config = PolicyConfig(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
policy = Policy(config).train()
optimizer = adam(policy.parameters(), lr=1e-2, weight_decay=0.01)
g = torch.Generator().manual_seed(1)
sizes, space, lead = config.sizes, ActionSpace.default(), (1, 2)
pixels = lambda *shape: torch.randint(0, 256, (*lead, *shape), dtype=torch.uint8, generator=g)
obs = Observation(
    global_view=pixels(*sizes.global_hw, 3),
    quadrants=pixels(4, *sizes.quadrant_hw, 3),
    fovea=pixels(sizes.fovea, sizes.fovea, 3),
    speed=torch.randint(1, config.speeds + 1, lead, generator=g),
    pointer=torch.randint(0, space.lattice, (*lead, 2), generator=g),
)
shape = (*lead, space.slots)
kind = torch.randint(0, space.kinds, shape, generator=g)
tokens = torch.cat([kind[..., None], torch.randint(0, space.lattice, (*shape, 2), generator=g)], dim=-1)
for _ in range(3):
    loss = -policy(obs, tokens).logp.mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
print(json.dumps({"sha256": weights_sha256(policy.state_dict()), "numerics": numerics(pinned=state and state["pinned"])}))
"""


def train(pin: bool, machine: dict[str, str]) -> dict:
    """The child's short training, pinned or not, in a process whose CPU libraries see `machine`."""
    env = {key: value for key, value in os.environ.items() if key not in {*PINNED, *AVX2_ONLY}}
    env.update(machine, OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "pin" if pin else "native"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not pinnable(), reason="the pinning is for x86-64 CPUs")
def test_pinned_training_gives_the_same_weights_under_avx512_and_avx2() -> None:
    native, avx2 = train(True, {}), train(True, AVX2_ONLY)
    assert native["numerics"]["pinned"] and avx2["numerics"]["pinned"]
    assert native["numerics"]["aten_capability"] == avx2["numerics"]["aten_capability"] == "AVX2"
    assert native["sha256"] == avx2["sha256"]
    if not cpu()["avx512"]:
        pytest.skip(
            "this CPU has no AVX-512: an unpinned process picks AVX2 by itself, nothing to tell apart"
        )
    # Without the pinning the two processes' kernels differ, and so do the weights: the pinning is what
    # made them agree (and it changes the native run's numbers).
    unpinned_native, unpinned_avx2 = train(False, {}), train(False, AVX2_ONLY)
    assert unpinned_native["numerics"]["aten_capability"] != "AVX2"
    assert not unpinned_native["numerics"]["pinned"]
    assert unpinned_native["sha256"] != unpinned_avx2["sha256"]
    assert unpinned_native["sha256"] != native["sha256"]


def test_pinning_sets_every_variable_and_says_when_torch_came_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hoi4_arena.numerics.pinnable", lambda: True)
    environ = {"ATEN_CPU_CAPABILITY": "avx512"}
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    state = pin_numerics(environ)
    assert environ == PINNED and state["settings"] == PINNED and state["pinned"]
    # torch already loaded with other settings: this process is not pinned (its children are).
    environ = {}
    monkeypatch.setitem(sys.modules, "torch", pytest)  # any module: only its presence is looked at
    monkeypatch.setattr("hoi4_arena.numerics.numerics", lambda env, pinned: {"pinned": pinned})
    assert pin_numerics(environ) == {"pinned": False} and environ == PINNED
    # ... unless this process started with them (a pinned parent's child).
    assert pin_numerics(environ) == {"pinned": True}


def test_numerics_reports_the_cpu() -> None:
    state = numerics({})
    assert state["pinned"] is False and set(state["settings"]) == set(PINNED)
    assert state["avx512"] in (True, False, None) and (state["cpu"] is None or isinstance(state["cpu"], str))


def test_only_the_quickstart_command_pins_and_before_it_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from hoi4_arena import cli

    calls: list[str] = []
    monkeypatch.setattr(cli, "pin_numerics", lambda: calls.append("pinned"))
    for argv, pinned in (
        (["--log-level", "error", "quickstart", str(tmp_path / "q"), "--games", "0"], ["pinned"]),
        (["win-rate", str(tmp_path / "missing.jsonl")], []),
    ):
        calls.clear()
        monkeypatch.setattr(sys, "argv", ["hoi4-arena", *argv])
        with pytest.raises(SystemExit) as stopped:
            cli.main()
        assert stopped.value.code == 2 and calls == pinned  # bad input: refused, after the pinning
