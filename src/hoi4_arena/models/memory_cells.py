"""Sequence memories for the memory study: one interface over GRU, Gated DeltaNet, Mamba-3 and none.

`train-memory` trains a memory and a head on cached encoder features; this module holds the memories.
Each cell reads x (B, T, I) and writes y (B, T, O) with a state carried between calls, in two forms:
`step` (one decision, what play uses) and `run` (a whole window, the fast form: cuDNN's GRU, the chunked
WY form of the delta rule, the chunked SSD form of the state space model). `run_recurrent` is the
reference: a Python loop of `step`, and the tests hold `run` to it.

- `gru`: torch's GRU.
- `none`: an MLP of x alone, the control: what the study measures is what memory adds over it.
- `gdn2`: Gated DeltaNet (see `GatedDeltaNet`).
- `mamba3`: Mamba-2's SSD with Mamba-3's trapezoidal rule and rotary (complex) state (see `Mamba3`).

A state is a tuple of batch-first tensors (empty for `none`), so `detach_state` and `keep_state` (reset
the rows of finished episodes) work on every kind alike. `hidden_for_parameters` picks each kind's
width for a parameter budget, so the study compares cells at equal size.

Try: .venv/bin/python -m pytest -q tests/models/test_memory_cells.py
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

MEMORY_KINDS = ("gru", "gdn2", "mamba3", "none")

State = tuple[Tensor, ...]


class MemoryCell(nn.Module):
    """x (B, T, I), state -> y (B, T, O), state. Subclasses set `kind` and define initial, step, run."""

    kind: str = ""

    def __init__(self, input_dim: int, output_dim: int) -> None:
        super().__init__()
        self.input_dim = input_dim
        self.output_dim = output_dim

    def initial(self, batch: int, device: torch.device | str | None = None) -> State:
        raise NotImplementedError

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """x (B, I) -> y (B, O) and the next state."""
        raise NotImplementedError

    def run(self, x: Tensor, state: State, *, chunk: int = 64) -> tuple[Tensor, State]:
        """x (B, T, I) -> y (B, T, O) and the state after the last step; the fast form."""
        raise NotImplementedError

    def run_recurrent(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """The reference for `run`: one `step` per time step."""
        ys = []
        for xt in x.unbind(1):
            y, state = self.step(xt, state)
            ys.append(y)
        return torch.stack(ys, dim=1), state


# --- gru ---


class GRUMemory(MemoryCell):
    """torch's GRU; `step` calls the same module on one time step, so both forms share the weights."""

    kind = "gru"

    def __init__(self, input_dim: int, hidden: int) -> None:
        super().__init__(input_dim, hidden)
        self.gru = nn.GRU(input_dim, hidden, batch_first=True)

    def initial(self, batch: int, device: torch.device | str | None = None) -> State:
        return (torch.zeros(batch, self.output_dim, device=device),)

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        y, state = self.run(x[:, None], state)
        return y[:, 0], state

    def run(self, x: Tensor, state: State, *, chunk: int = 64) -> tuple[Tensor, State]:
        (h,) = state
        y, h = self.gru(x, h[None].contiguous())  # nn.GRU's state is (layers, B, H)
        return y, (h[0],)


# --- none ---


class NoMemory(MemoryCell):
    """y = MLP(x): no state at all. The study's control."""

    kind = "none"

    def __init__(self, input_dim: int, hidden: int) -> None:
        super().__init__(input_dim, hidden)
        self.mlp = nn.Sequential(nn.Linear(input_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden))

    def initial(self, batch: int, device: torch.device | str | None = None) -> State:
        return ()

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        return self.mlp(x), state

    def run(self, x: Tensor, state: State, *, chunk: int = 64) -> tuple[Tensor, State]:
        return self.mlp(x), state


# --- building and sizing ---

_CELLS: dict[str, type[MemoryCell]] = {"gru": GRUMemory, "none": NoMemory}


def build_memory(kind: str, input_dim: int, hidden: int, **options: int) -> MemoryCell:
    """A memory of `kind` reading `input_dim` features and writing `hidden` (its output width)."""
    if kind not in _CELLS:
        raise ValueError(f"unknown memory {kind!r}; choose one of {', '.join(_CELLS)}")
    return _CELLS[kind](input_dim, hidden, **options)


def _width_step(kind: str, options: dict[str, int]) -> int:
    """The granularity of `hidden` for a kind: multi-head cells need a multiple of their head count."""
    return int(options.get("heads", 4)) if kind in ("gdn2", "mamba3") else 1


def hidden_for_parameters(kind: str, input_dim: int, parameters: int, **options: int) -> int:
    """The `hidden` for build_memory(kind, input_dim, hidden, **options) whose parameter count is closest
    to `parameters`. Counted on the meta device, so sizing a large cell allocates nothing."""
    step = _width_step(kind, options)

    def count(hidden: int) -> int:
        with torch.device("meta"):
            return parameter_count(build_memory(kind, input_dim, hidden, **options))

    # Counts grow with hidden: double up to a bracket, then bisect over multiples of step.
    low, high = 1, 1
    while count(high * step) < parameters:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if count(middle * step) < parameters else (low, middle)
    return min((low * step, high * step), key=lambda h: abs(count(h) - parameters))


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def detach_state(state: State) -> State:
    """The same state cut from the graph: truncated backpropagation through time between windows."""
    return tuple(s.detach() for s in state)


def keep_state(state: State, keep: Tensor) -> State:
    """keep (B,) bool: rows where keep is False go back to the initial state (zeros for every kind);
    the rest stay. A where, not a product: a NaN in a finished row must not survive its reset."""
    return tuple(torch.where(keep.view(-1, *([1] * (s.dim() - 1))), s, s.new_zeros(())) for s in state)
