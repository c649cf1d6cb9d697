"""The action head: exact likelihood, sampling, argmax decoding, soft move targets, heat maps.

A tiny action space (2 slots, 3 kinds, a 4x4 lattice in 2x2 cells) is small enough to enumerate every
action, so normalisation and sampling are checked against the whole distribution.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from hoi4_arena.models.config import ActionSpace, PointerGrid
from hoi4_arena.models.head import ActionHead
from hoi4_arena.models.pointer_target import gaussian_pointer_target

TINY_SPACE = ActionSpace(slots=2, kind_names=("none", "move", "key"), move_kinds=(1,), lattice=4)
TINY_GRID = PointerGrid(lattice=4, cells=2)
CONTEXT, CELL_DIM = 6, 5


def tiny_head(seed: int = 0) -> ActionHead:
    torch.manual_seed(seed)
    head = ActionHead(TINY_SPACE, TINY_GRID, CONTEXT, CELL_DIM, dim=12, position_dim=7)
    # Random (not zero) biases so no factor is uniform by construction.
    with torch.no_grad():
        head.cell_bias.normal_()
    return head


def tiny_inputs(n: int = 1, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    context = torch.randn(1, CONTEXT, generator=g).expand(n, -1)
    cells = torch.randn(1, TINY_GRID.count, CELL_DIM, generator=g).expand(n, -1, -1)
    return context, cells


def every_token() -> list[tuple[int, int, int]]:
    tokens = [(0, 0, 0), (2, 0, 0)]
    tokens += [(1, x, y) for y in range(4) for x in range(4)]
    return tokens


def every_action() -> torch.Tensor:
    return torch.tensor(list(itertools.product(every_token(), repeat=TINY_SPACE.slots)))


def test_every_action_enumerated_has_total_probability_one() -> None:
    head = tiny_head()
    actions = every_action()  # (324, 2, 3)
    context, cells = tiny_inputs(len(actions))
    logp = head.score(context, cells, actions).logp
    assert actions.shape[0] == 18**2
    assert torch.logsumexp(logp.double(), 0).exp().item() == pytest.approx(1.0, abs=1e-5)
    # A different context is a different distribution, still normalised.
    context2, cells2 = tiny_inputs(len(actions), seed=7)
    logp2 = head.score(context2, cells2, actions).logp
    assert not torch.allclose(logp, logp2)
    assert torch.logsumexp(logp2.double(), 0).exp().item() == pytest.approx(1.0, abs=1e-5)


def test_non_pointer_tokens_carry_no_pointer_terms() -> None:
    head = tiny_head()
    context, cells = tiny_inputs(1)
    scores = head.score(context, cells, torch.tensor([[[0, 0, 0], [1, 3, 2]]]))
    assert scores.move.tolist() == [[False, True]]
    assert scores.cell_logp[0, 0] == 0 and scores.position_logp[0, 0] == 0
    assert scores.cell_logp[0, 1] < 0 and scores.position_logp[0, 1] < 0


def test_sampling_frequencies_match_probabilities() -> None:
    head = tiny_head()
    actions = every_action()
    context, cells = tiny_inputs(len(actions))
    probs = head.score(context, cells, actions).logp.exp()
    n = 60_000
    context, cells = tiny_inputs(n)
    sampled, logp, _ = head.decode(
        context, cells, temperature=1.0, generator=torch.Generator().manual_seed(3)
    )
    index = {tuple(map(tuple, a.tolist())): i for i, a in enumerate(actions)}
    counts = torch.zeros(len(actions))
    for action in sampled.tolist():
        counts[index[tuple(map(tuple, action))]] += 1
    frequencies = counts / n
    # Total variation between sample and distribution; 60k draws over 324 outcomes stay well below this.
    assert 0.5 * (frequencies - probs).abs().sum() < 0.03
    # The log p decode reports is the exact log-likelihood of what it chose.
    rescored = head.score(context[:500], cells[:500], sampled[:500]).logp
    torch.testing.assert_close(logp[:500], rescored, atol=1e-5, rtol=1e-5)


def test_temperature_sharpens_sampling() -> None:
    head = tiny_head()
    context, cells = tiny_inputs(4000)
    g = torch.Generator().manual_seed(5)
    hot, *_ = head.decode(context, cells, temperature=2.0, generator=g)
    cold, *_ = head.decode(context, cells, temperature=0.25, generator=g)
    greedy, *_ = head.decode(context[:1], cells[:1], temperature=0.0)
    same_as_greedy = {
        name: (t == greedy).all(-1).all(-1).float().mean() for name, t in (("hot", hot), ("cold", cold))
    }
    assert same_as_greedy["cold"] > same_as_greedy["hot"]


def test_argmax_decoding_is_deterministic_and_greedy() -> None:
    head = tiny_head()
    context, cells = tiny_inputs(3)
    first, logp1, entropy1 = head.decode(
        context, cells, temperature=0.0, generator=torch.Generator().manual_seed(1)
    )
    second, logp2, _ = head.decode(
        context, cells, temperature=0.0, generator=torch.Generator().manual_seed(2)
    )
    assert torch.equal(first, second) and torch.equal(logp1, logp2)
    assert torch.equal(entropy1, torch.zeros(3))  # argmax draws nothing
    # Greedy: at each slot, given the chosen earlier slots, the chosen kind and point are the argmaxes.
    scores = head.score(context, cells, first)
    assert torch.equal(scores.kind_pred, first[..., 0])
    move = scores.move
    assert torch.equal(scores.pointer_pred[move], first[..., 1:][move])


def test_soft_target_equals_expectation_over_the_lattice() -> None:
    head = tiny_head()
    context, cells = tiny_inputs(1)
    x, y, sigma = 1, 2, 0.8
    soft = head.score(context, cells, torch.tensor([[[1, x, y], [0, 0, 0]]]), pointer_sigma=sigma)
    # Brute force: sum over every lattice point of target(x', y') * log p(x', y') at slot 0.
    target = gaussian_pointer_target(x, y, sigma, lattice=4).dense()
    expected = torch.zeros((), dtype=torch.float64)
    for yy in range(4):
        for xx in range(4):
            s = head.score(context, cells, torch.tensor([[[1, xx, yy], [0, 0, 0]]]))
            expected += target[yy, xx] * (s.cell_logp[0, 0] + s.position_logp[0, 0]).double()
    got = soft.cell_logp[0, 0] + soft.position_logp[0, 0]
    assert got.item() == pytest.approx(expected.item(), abs=1e-5)
    # The kind term does not depend on sigma.
    hard = head.score(context, cells, torch.tensor([[[1, x, y], [0, 0, 0]]]))
    torch.testing.assert_close(soft.kind_logp, hard.kind_logp)


def test_soft_target_reduces_to_the_exact_point_as_sigma_goes_to_zero(space: ActionSpace) -> None:
    torch.manual_seed(0)
    grid = PointerGrid(space.lattice, 32)
    head = ActionHead(space, grid, CONTEXT, CELL_DIM, dim=16, position_dim=8)
    g = torch.Generator().manual_seed(4)
    context = torch.randn(2, CONTEXT, generator=g)
    cells = torch.randn(2, grid.count, CELL_DIM, generator=g)
    move = space.move_kinds[0]
    # Points inside a cell, on a cell border and on the lattice's edge.
    tokens = torch.tensor([[[move, 500, 300], [move, 31, 32]] + [[0, 0, 0]] * 6,
                           [[move, 0, 1023], [0, 0, 0]] + [[0, 0, 0]] * 6])  # fmt: skip
    hard = head.score(context, cells, tokens)
    gaps = []
    for sigma in (4.0, 1.0, 0.5, 0.25, 0.05):
        soft = head.score(context, cells, tokens, pointer_sigma=sigma)
        gaps.append((soft.logp - hard.logp).abs().max().item())
    assert gaps[0] > 1e-3  # a real blob is scored differently from its centre
    assert gaps[2] > 1e-6  # still a blob at half a lattice unit
    assert gaps[-1] < 1e-6  # and the exact point once the blob is far narrower than one unit


def test_heatmap_is_the_pointer_distribution_of_that_slot() -> None:
    head = tiny_head()
    context, cells = tiny_inputs(1)
    prefix = torch.tensor([[[2, 0, 0]]])
    heat = head.pointer_heatmap(context, cells, prefix)
    assert heat.shape == (1, 4, 4)
    assert heat.sum().item() == pytest.approx(1.0, abs=1e-6)
    for y in range(4):
        for x in range(4):
            s = head.score(context, cells, torch.tensor([[[2, 0, 0], [1, x, y]]]))
            p = (s.cell_logp[0, 1] + s.position_logp[0, 1]).exp()
            assert heat[0, y, x].item() == pytest.approx(p.item(), rel=1e-5)


def test_decode_reports_the_entropy_of_the_distributions_it_drew_from() -> None:
    # By hand: each slot's state teacher-forced on the tokens decode chose; the kind's entropy, and for a
    # move kind the cell's, column's and row's, each softmax(logits / temperature), summed over slots.
    head = tiny_head()
    context, cells = tiny_inputs(64)
    temperature = 1.5
    tokens, _, entropy = head.decode(context, cells, temperature, generator=torch.Generator().manual_seed(4))
    u = head._slot_states(context, cells, tokens[:, :-1])
    kind, x, y = tokens.unbind(-1)
    rows = torch.arange(tokens.shape[0])[:, None]
    column, row = head._position_logits(u, cells[rows, head._cell_of(x, y)])

    def h(logits: torch.Tensor) -> torch.Tensor:
        return torch.distributions.Categorical(logits=logits / temperature).entropy()

    pointer = h(head._cell_logits(u, cells)) + h(column) + h(row)
    move = head.tokens.move_mask[kind]
    assert move.any() and not move.all()
    expected = (h(head.kind(u)) + torch.where(move, pointer, 0.0)).sum(-1)
    torch.testing.assert_close(entropy, expected, atol=1e-4, rtol=1e-5)
