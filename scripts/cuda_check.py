"""The CUDA path on a machine with a GPU: the checks that no machine of this project's kind can run.

1. The exact views on the GPU: tests/screen/test_resample.py and test_views.py, whose CUDA cases are skipped
   without a GPU (torch's integer resampler against the golden vectors, byte for byte), run by the caller
   with pytest;
2. the policy on the GPU: the same weights and inputs give the CPU's scores (teacher-forced log-likelihoods
   and the value, to float tolerance), and argmax decoding picks the same tokens; one training step (the
   loss's gradient and an AdamW update) runs on the GPU and changes the weights.

Usage (the repository's root; the package by PYTHONPATH, no install):

    PYTHONPATH=src python3 -m pytest --noconftest -q tests/screen/test_resample.py tests/screen/test_views.py
    PYTHONPATH=src:tests python3 scripts/cuda_check.py     # prints one JSON line; exit 1 on a mismatch
    PYTHONPATH=src:tests python3 scripts/cuda_check.py cpu # the script itself, on a machine without a GPU
"""

from __future__ import annotations

import json
import signal
import sys

import torch

from hoi4_arena.models.config import ActionSpace, PolicyConfig
from hoi4_arena.models.policy import Observation, Policy
from hoi4_arena.training.run_control import adam
from tiny import TINY


def observation(config: PolicyConfig, batch: int, steps: int, seed: int) -> Observation:
    g = torch.Generator().manual_seed(seed)
    sizes = config.sizes

    def pixels(*shape: int) -> torch.Tensor:
        return torch.randint(0, 256, (batch, steps, *shape), dtype=torch.uint8, generator=g)

    clip = (sizes.clip,) if config.reads_clip else ()
    return Observation(
        global_view=pixels(*clip, *sizes.global_hw, 3),
        quadrants=pixels(4, *sizes.quadrant_hw, 3),
        fovea=pixels(sizes.fovea, sizes.fovea, 3),
        speed=torch.randint(1, config.speeds + 1, (batch, steps), generator=g),
        pointer=torch.randint(0, 1024, (batch, steps, 2), generator=g),
    )


def tokens(space: ActionSpace, batch: int, steps: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    shape = (batch, steps, space.slots)
    kind = torch.randint(0, space.kinds, shape, generator=g)
    move = torch.rand(shape, generator=g) < 0.4
    kind = torch.where(move, torch.tensor(space.move_kinds[0]), kind)
    is_pointer = (kind[..., None] == torch.tensor(space.move_kinds)).any(-1)
    xy = torch.randint(0, space.lattice, (*shape, 2), generator=g)
    xy = torch.where(is_pointer[..., None], xy, torch.zeros_like(xy))
    return torch.cat([kind[..., None], xy], dim=-1)


def main(device: str = "cuda") -> int:
    """`device`: cuda, or cpu to try the script itself on a machine without a GPU."""
    if device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"cuda": False}))
        return 1
    torch.manual_seed(0)
    config = PolicyConfig(layout="cpu", **TINY)
    cpu = Policy(config).eval()
    gpu = Policy(config).eval()
    gpu.load_state_dict(cpu.state_dict())
    gpu = gpu.to(device)
    obs, acts = observation(config, 4, 6, seed=1), tokens(ActionSpace.default(), 4, 6, seed=2)
    with torch.no_grad():
        a = cpu(obs, acts)
        b = gpu(obs.to(device), acts.to(device))
        logp_cpu, logp_gpu = a.scores.logp, b.scores.logp.cpu()
        value_gap = float((a.value - b.value.cpu()).abs().max())
        step_obs = observation(config, 4, 1, seed=3)
        one = Observation(**{k: v[:, 0] for k, v in vars(step_obs).items() if v is not None})
        tokens_cpu = cpu.step(one, deterministic=True).tokens
        tokens_gpu = gpu.step(one.to(device), deterministic=True).tokens.cpu()
    logp_gap = float((logp_cpu - logp_gpu).abs().max())
    # one training step on the GPU
    gpu.train()
    optimizer = adam(gpu.parameters(), lr=1e-3, weight_decay=0.01)
    before = [p.detach().clone() for p in gpu.parameters()]
    loss = -gpu(obs.to(device), acts.to(device)).scores.logp.mean()
    loss.backward()
    optimizer.step()
    moved = sum(
        int(not torch.equal(p0, p1.detach())) for p0, p1 in zip(before, gpu.parameters(), strict=True)
    )
    report = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else device,
        "torch": torch.__version__,
        "logp_max_abs_gap": logp_gap,
        "value_max_abs_gap": value_gap,
        "argmax_tokens_equal": bool(torch.equal(tokens_cpu, tokens_gpu)),
        "train_loss": float(loss.detach()),
        "tensors_updated": moved,
        "tensors": len(before),
    }
    print(json.dumps(report))
    ok = logp_gap < 1e-3 and value_gap < 1e-4 and report["argmax_tokens_equal"] and moved > 0
    return 0 if ok else 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    sys.exit(main(*sys.argv[1:2]))
