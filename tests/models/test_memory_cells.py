"""The memory cells: the fast form equals the step-by-step reference (outputs, states, gradients), states
carry across calls and reset by row, parameter budgets are met, and every memory beats none at recall."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hoi4_arena.models.memory_cells import (
    MEMORY_KINDS,
    MemoryCell,
    build_memory,
    detach_state,
    hidden_for_parameters,
    keep_state,
    parameter_count,
)

KINDS = ("gru", "none")
INPUT = 6


def make(kind: str, hidden: int = 16, dtype: torch.dtype = torch.float64, seed: int = 0) -> MemoryCell:
    torch.manual_seed(seed)
    return build_memory(kind, INPUT, hidden).to(dtype)


def random_state(cell: MemoryCell, batch: int, dtype: torch.dtype, seed: int = 1) -> tuple[torch.Tensor, ...]:
    """A non-zero state, as a window in the middle of an episode starts from."""
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(s.shape, generator=g, dtype=dtype) * 0.5 for s in cell.initial(batch))


def inputs(batch: int, steps: int, dtype: torch.dtype, seed: int = 2) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, steps, INPUT, generator=g, dtype=dtype)


def assert_states_close(a, b, atol: float) -> None:
    assert len(a) == len(b)
    for sa, sb in zip(a, b, strict=True):
        assert sa.shape == sb.shape
        torch.testing.assert_close(sa, sb, atol=atol, rtol=0)


def test_kinds_are_the_registered_ones() -> None:
    assert set(KINDS) <= set(MEMORY_KINDS)
    with pytest.raises(ValueError, match="unknown memory"):
        build_memory("lstm", INPUT, 8)


@pytest.mark.parametrize("kind", KINDS)
def test_shapes_and_initial_state(kind) -> None:
    cell = make(kind, dtype=torch.float32)
    assert cell.kind == kind and cell.input_dim == INPUT and cell.output_dim == 16
    state = cell.initial(3)
    assert all(s.shape[0] == 3 and not s.any() for s in state)  # batch-first, and zeros: keep_state's reset
    y, next_state = cell.step(inputs(3, 1, torch.float32)[:, 0], state)
    assert y.shape == (3, 16)
    y, next_state = cell.run(inputs(3, 5, torch.float32), state)
    assert y.shape == (3, 5, 16)
    assert [s.shape for s in next_state] == [s.shape for s in state]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("dtype", "atol"), [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_run_equals_recurrence(kind, dtype, atol) -> None:
    # 11 steps in chunks of 4: two full chunks and a short one.
    cell = make(kind, dtype=dtype)
    x, state = inputs(3, 11, dtype), random_state(cell, 3, dtype)
    with torch.no_grad():
        fast_y, fast_state = cell.run(x, state, chunk=4)
        slow_y, slow_state = cell.run_recurrent(x, state)
    torch.testing.assert_close(fast_y, slow_y, atol=atol, rtol=0)
    assert_states_close(fast_state, slow_state, atol)


@pytest.mark.parametrize("kind", KINDS)
def test_state_carries_across_calls(kind) -> None:
    cell = make(kind)
    x, state = inputs(2, 13, torch.float64), random_state(cell, 2, torch.float64)
    with torch.no_grad():
        whole_y, whole_state = cell.run(x, state, chunk=4)
        first_y, middle = cell.run(x[:, :6], state, chunk=4)
        second_y, split_state = cell.run(x[:, 6:], middle, chunk=4)
    torch.testing.assert_close(torch.cat([first_y, second_y], dim=1), whole_y, atol=1e-10, rtol=0)
    assert_states_close(split_state, whole_state, 1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_equal_the_recurrence(kind) -> None:
    cell = make(kind)
    x, state = inputs(2, 9, torch.float64), random_state(cell, 2, torch.float64)

    def grads(run) -> list[torch.Tensor]:
        cell.zero_grad(set_to_none=True)
        xs = x.clone().requires_grad_()
        s0 = tuple(s.clone().requires_grad_() for s in state)
        y, s1 = run(xs, s0)
        # Weights every output and state entry differently, so a permuted gradient cannot pass.
        g = torch.Generator().manual_seed(3)
        loss = (y * torch.randn(y.shape, generator=g, dtype=y.dtype)).sum()
        loss = loss + sum((s * torch.randn(s.shape, generator=g, dtype=s.dtype)).sum() for s in s1)
        loss.backward()
        return [xs.grad, *(s.grad for s in s0), *(p.grad for p in cell.parameters())]

    fast = grads(lambda xs, s0: cell.run(xs, s0, chunk=4))
    slow = grads(cell.run_recurrent)
    assert all(g is not None for g in slow)
    for a, b in zip(fast, slow, strict=True):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_keep_state_resets_only_the_chosen_rows(kind) -> None:
    cell = make(kind)
    state = random_state(cell, 4, torch.float64)
    keep = torch.tensor([True, False, True, False])
    kept = keep_state(state, keep)
    fresh = cell.initial(4)
    for s, k, f in zip(state, kept, fresh, strict=True):
        assert torch.equal(k[keep], s[keep])
        assert torch.equal(k[~keep], f[~keep].to(k.dtype))
    # A NaN in a finished row does not survive its reset.
    if state:
        poisoned = (torch.full_like(state[0], float("nan")), *state[1:])
        assert not keep_state(poisoned, torch.zeros(4, dtype=torch.bool))[0].isnan().any()


@pytest.mark.parametrize("kind", KINDS)
def test_detach_state_cuts_the_graph(kind) -> None:
    cell = make(kind)
    _, state = cell.run(inputs(2, 3, torch.float64), random_state(cell, 2, torch.float64))
    assert all(not s.requires_grad for s in detach_state(state))
    assert all(torch.equal(a, b) for a, b in zip(detach_state(state), state, strict=True))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("budget", [20_000, 300_000])
def test_hidden_for_parameters_meets_the_budget(kind, budget) -> None:
    hidden = hidden_for_parameters(kind, 64, budget)
    count = parameter_count(build_memory(kind, 64, hidden))
    assert abs(count - budget) <= 0.1 * budget, (hidden, count)


# --- learning: remember the first token over 20 steps ---


def recall_accuracy(kind: str, steps: int = 100, seed: int = 0) -> float:
    """Step 0 shows one of 4 tokens, every step shows noise on other channels; at step 19 say which token it was.
    `none` sees only step 19, so it is at chance (1/4); a memory should be near 1."""
    torch.manual_seed(seed)
    cell = build_memory(kind, INPUT, 24)
    readout = nn.Linear(24, 4)
    optimizer = torch.optim.Adam([*cell.parameters(), *readout.parameters()], lr=1e-2)
    g = torch.Generator().manual_seed(seed)

    def batch(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        token = torch.randint(0, 4, (n,), generator=g)
        x = torch.zeros(n, 20, INPUT)
        x[:, :, 4:] = torch.randn(n, 20, INPUT - 4, generator=g)  # distractors
        x[:, 0, :4] = nn.functional.one_hot(token, 4).float()
        return x, token

    for _ in range(steps):
        x, token = batch(64)
        y, _ = cell.run(x, cell.initial(64), chunk=8)
        # Every step asks for the first token: the short gaps teach holding it before the long ones.
        loss = nn.functional.cross_entropy(readout(y).flatten(0, 1), token.repeat_interleave(20))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    x, token = batch(512)
    with torch.no_grad():
        y, _ = cell.run(x, cell.initial(512), chunk=8)
    return (readout(y[:, -1]).argmax(-1) == token).float().mean().item()


def test_memories_beat_none_at_recall() -> None:
    control = recall_accuracy("none")
    assert control < 0.4
    for kind in KINDS:
        if kind != "none":
            assert recall_accuracy(kind) > 0.9, kind
