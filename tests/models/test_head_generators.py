"""ActionHead.decode with one generator per row (models/head.py): each row samples as a batch of one would."""

from __future__ import annotations

import torch

from hoi4_arena.models import Policy, PolicyConfig
from hoi4_arena.models.policy import Observation
from tiny import TINY


def test_each_row_samples_what_its_own_batch_of_one_samples() -> None:
    torch.manual_seed(0)
    policy = Policy(PolicyConfig(layout="cpu", **TINY)).eval()
    s = policy.sizes
    b = 3
    obs = Observation(
        torch.randint(0, 256, (b, *s.global_hw, 3), dtype=torch.uint8),
        torch.randint(0, 256, (b, 4, *s.quadrant_hw, 3), dtype=torch.uint8),
        torch.randint(0, 256, (b, s.fovea, s.fovea, 3), dtype=torch.uint8),
        torch.tensor([1, 3, 5]),
        torch.tensor([[0, 0], [512, 300], [1023, 1023]]),
    )
    batched = policy.step(obs, generator=[torch.Generator().manual_seed(10 + i) for i in range(b)])
    for i in range(b):
        one = policy.step(obs.select(i), generator=torch.Generator().manual_seed(10 + i))
        assert torch.equal(batched.tokens[i], one.tokens[0])
        torch.testing.assert_close(batched.logp[i], one.logp[0], rtol=1e-5, atol=1e-4)
    # One generator for the whole batch draws another sequence: the rows are not independent streams.
    shared = policy.step(obs, generator=torch.Generator().manual_seed(10))
    assert not all(torch.equal(shared.tokens[i], batched.tokens[i]) for i in range(b))
