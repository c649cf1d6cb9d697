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

import math

import torch
import torch.nn.functional as F
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
        """The state before an episode's first step: zeros (keep_state relies on it), in the cell's dtype,
        on `device` or else where the cell's weights are."""
        raise NotImplementedError

    def _zeros(self, *shape: int, device: torch.device | str | None) -> Tensor:
        weight = next(self.parameters())
        return torch.zeros(*shape, dtype=weight.dtype, device=weight.device if device is None else device)

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
        return (self._zeros(batch, self.output_dim, device=device),)

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


# --- shared by the chunked forms ---


def _split_chunks(z: Tensor, chunk: int) -> Tensor:
    """(B, T, H, ...) -> (B, H, n, chunk, ...), zero-padded at the end to whole chunks.
    Zeros are harmless in both cells: a zero log decay keeps the state, a zero write adds nothing."""
    z = z.movedim(1, 2)
    t = z.shape[2]
    pad = -t % chunk
    if pad:
        z = F.pad(z, [0, 0] * (z.dim() - 3) + [0, pad])
    return z.reshape(*z.shape[:2], -1, chunk, *z.shape[3:])


def _merge_chunks(z: Tensor, steps: int) -> Tensor:
    """(B, H, n, chunk, D) -> (B, T, H, D), the padding dropped."""
    return z.flatten(2, 3)[:, :, :steps].movedim(2, 1)


def _decay_matrix(log_cumulative: Tensor) -> Tensor:
    """(..., C) cumulative log decays within a chunk -> (..., C, C) with [t, s] = prod_{s<r<=t} alpha_r for
    s <= t and 0 above the diagonal. Masked before the exp: above the diagonal the difference is positive
    and could overflow (the segment sum of the SSD paper, in log space)."""
    c = log_cumulative.shape[-1]
    causal = torch.ones(c, c, dtype=torch.bool, device=log_cumulative.device).tril()
    diff = log_cumulative[..., :, None] - log_cumulative[..., None, :]
    return diff.masked_fill(~causal, float("-inf")).exp()


def _inverse_softplus_dt(heads: int, low: float = 1e-3, high: float = 1e-1) -> Tensor:
    """Biases that put softplus(bias) log-uniform in [low, high]: Mamba-2's and GDN's step-size init."""
    dt = torch.exp(torch.rand(heads) * (math.log(high) - math.log(low)) + math.log(low))
    return dt + torch.log(-torch.expm1(-dt))


# --- gdn2 ---


class GatedDeltaNet(MemoryCell):
    """Gated DeltaNet (Yang, Kautz, Hatamizadeh 2024, "Gated Delta Networks: Improving Mamba2 with Delta
    Rule", arXiv 2412.06464): the gated delta rule, eq. (10) of the paper, per head.

    The paper writes S_t = S_{t-1} alpha_t (I - beta_t k_t k_t^T) + beta_t v_t k_t^T, o_t = S_t q_t with
    S (d_v x d_k). Here S is stored transposed, (d_k x d_v) as flash-linear-attention does:
        S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,    o_t = S_t^T q_t,
    which is the same recurrence. alpha_t = exp(-exp(A_log) * softplus(a_t + dt_bias)) (Mamba-2's
    decay, kept in log space), beta_t = sigmoid(b_t). The block of section 3.4: q, k, v are a linear map
    of x, a short causal depthwise convolution (`conv` taps; 0 leaves it out), SiLU, and q, k are
    L2-normalised (q also scaled by d_k^-1/2, as flash-linear-attention does); the output is
    RMSNorm(o_t) * SiLU(gate_t) per head, then a linear map to `hidden`. The state carries, besides S,
    the convolution's last `conv - 1` inputs, so a window split in two equals one window.

    `run` is the chunkwise form of the paper's section 3.3 and appendix A (the extended WY
    representation): within a chunk the pseudo-values U solve a unit lower-triangular system (the UT
    transform, here torch.linalg.solve_triangular), U = (I + A)^-1 (beta V - beta Gamma K S_0) with
    A[t, s] = beta_t (Gamma_t / Gamma_s) k_t.k_s for s < t, then
        O = (Gamma Q) S_0 + (Q K^T * D) U,   S_C = Gamma_C S_0 + (K * Gamma_C / Gamma)^T U,
    one small state hand-over per chunk. `step` is the per-step delta rule.

    Left out: the model around the token mixer (SwiGLU MLPs, stacking) and the hybrids with sliding-window
    attention (GatedDeltaNet-H1/H2). "Gated DeltaNet-2" in the issue is taken to mean this, the closest
    published form.
    """

    kind = "gdn2"

    def __init__(self, input_dim: int, hidden: int, heads: int = 4, expand_v: int = 1, conv: int = 4) -> None:
        super().__init__(input_dim, hidden)
        if hidden % heads:
            raise ValueError(f"gdn2: hidden {hidden} is not a multiple of heads {heads}")
        self.heads, self.key_dim = heads, hidden // heads
        self.value_dim = self.key_dim * expand_v
        k, v = heads * self.key_dim, heads * self.value_dim
        self.qkv = nn.Linear(input_dim, 2 * k + v, bias=False)
        self.taps = conv
        self.conv = nn.Conv1d(2 * k + v, 2 * k + v, conv, groups=2 * k + v, bias=False) if conv else None
        self.gates = nn.Linear(input_dim, 2 * heads)  # decay (a) and write strength (b) per head
        self.output_gate = nn.Linear(input_dim, v, bias=False)
        self.A_log = nn.Parameter(torch.empty(heads).uniform_(1, 16).log())
        self.dt_bias = nn.Parameter(_inverse_softplus_dt(heads))
        self.norm = nn.RMSNorm(self.value_dim, eps=1e-5)
        self.out = nn.Linear(v, hidden, bias=False)

    def initial(self, batch: int, device: torch.device | str | None = None) -> State:
        channels = self.qkv.out_features
        return (
            self._zeros(batch, self.heads, self.key_dim, self.value_dim, device=device),  # S
            self._zeros(batch, max(self.taps - 1, 0), channels, device=device),  # the convolution's inputs
        )

    def _project(self, x: Tensor, buffer: Tensor) -> tuple[Tensor, ...]:
        """x (B, T, I), buffer (B, taps - 1, 2K + V) -> q, k (B, T, H, K); v (B, T, H, V); log decay g,
        beta (B, T, H); and the next buffer."""
        h = self.heads
        qkv = self.qkv(x)
        if self.conv is not None:
            # A valid convolution over the carried inputs and this window: output t sees t - taps + 1 .. t.
            seq = torch.cat([buffer, qkv], dim=1)
            qkv = self.conv(seq.transpose(1, 2)).transpose(1, 2)
            buffer = seq[:, seq.shape[1] - buffer.shape[1] :]
        q, k, v = F.silu(qkv).split([h * self.key_dim, h * self.key_dim, h * self.value_dim], dim=-1)
        q = F.normalize(q.unflatten(-1, (h, -1)), dim=-1) * self.key_dim**-0.5
        k = F.normalize(k.unflatten(-1, (h, -1)), dim=-1)
        a, b = self.gates(x).chunk(2, dim=-1)
        g = -self.A_log.exp() * F.softplus(a + self.dt_bias)  # log alpha <= 0
        return q, k, v.unflatten(-1, (h, -1)), g, torch.sigmoid(b), buffer

    def _output(self, o: Tensor, x: Tensor) -> Tensor:
        """o (B, T, H, V) -> y (B, T, hidden)."""
        gate = F.silu(self.output_gate(x)).unflatten(-1, (self.heads, -1))
        return self.out((self.norm(o) * gate).flatten(-2))

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        s, buffer = state  # (B, H, K, V), (B, taps - 1, 2K + V)
        *projected, buffer = self._project(x[:, None], buffer)
        q, k, v, g, beta = (z[:, 0] for z in projected)
        s = g.exp()[..., None, None] * s
        u = beta[..., None] * (v - torch.einsum("bhkv,bhk->bhv", s, k))  # the delta: what k should read
        s = s + k[..., :, None] * u[..., None, :]
        o = torch.einsum("bhkv,bhk->bhv", s, q)
        return self._output(o[:, None], x[:, None])[:, 0], (s, buffer)

    def run(self, x: Tensor, state: State, *, chunk: int = 64) -> tuple[Tensor, State]:
        s, buffer = state
        steps = x.shape[1]
        *projected, buffer = self._project(x, buffer)
        q, k, v, g, beta = (_split_chunks(z, chunk) for z in projected)  # (B, H, n, C, ...)
        gc = g.cumsum(-1)  # log Gamma_t within each chunk
        decay = _decay_matrix(gc)  # (B, H, n, C, C)
        strict = (beta[..., :, None] * (k @ k.transpose(-1, -2)) * decay).tril(-1)
        eye = torch.eye(chunk, dtype=x.dtype, device=x.device)
        # The UT transform: one triangular solve gives both beta V and beta Gamma K through (I + A)^-1.
        rhs = torch.cat([beta[..., None] * v, (beta * gc.exp())[..., None] * k], dim=-1)
        solved = torch.linalg.solve_triangular(strict + eye, rhs, upper=False, unitriangular=True)
        u_v, w = solved.split([self.value_dim, self.key_dim], dim=-1)
        scores = (q @ k.transpose(-1, -2)) * decay  # causal, diagonal included
        q_start = q * gc.exp()[..., None]
        k_end = k * (gc[..., -1:] - gc).exp()[..., None]
        end = gc[..., -1].exp()[..., None, None]  # (B, H, n, 1, 1)
        outs = []
        for c in range(q.shape[2]):
            u = u_v[:, :, c] - w[:, :, c] @ s  # (B, H, C, V)
            outs.append(q_start[:, :, c] @ s + scores[:, :, c] @ u)
            s = end[:, :, c] * s + k_end[:, :, c].transpose(-1, -2) @ u
        o = _merge_chunks(torch.stack(outs, dim=2), steps)
        return self._output(o, x), (s, buffer)


# --- mamba3 ---


def _rotate(v: Tensor, angle: Tensor) -> Tensor:
    """Rotate v's first 2S entries, in adjacent pairs, by angle (..., S); the rest pass unrotated."""
    pairs = angle.shape[-1]
    a, b = v[..., : 2 * pairs].unflatten(-1, (pairs, 2)).unbind(-1)
    cos, sin = angle.cos(), angle.sin()
    rotated = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    return torch.cat([rotated, v[..., 2 * pairs :]], dim=-1)


class Mamba3(MemoryCell):
    """Mamba-3, SISO (Lahoti, Li, Chen, Wang, Bick, Kolter, Dao, Gu 2026, "Mamba-3: Improved Sequence
    Modeling using State Space Principles", arXiv 2603.15569), on Mamba-2's SSD (Dao & Gu 2024,
    arXiv 2405.21060). A selective scalar-decay SSM per head, state h (d_state x d_head):

        h_t = alpha_t h_{t-1} + beta_t B_{t-1} x_{t-1}^T + gamma_t B_t x_t^T,     y_t = h_t^T C_t + D x_t

    - exponential-trapezoidal discretisation: alpha_t = exp(dt_t A_t), gamma_t = lambda_t dt_t,
      beta_t = (1 - lambda_t) dt_t alpha_t, lambda_t = sigmoid(.) per head and step (lambda = 1 is
      Mamba-2's exponential-Euler rule); A_t = -softplus(.) <= -1e-4 and dt_t = softplus(. + dt_bias),
      both data-dependent, as in the official module;
    - complex (rotary) state: B_t and C_t rotated in pairs by Theta_t = sum_{s<=t} dt_s pi tanh(theta_s),
      data-dependent angles shared by the heads, on half of d_state (the official module's default
      rope_fraction of 0.5), Theta wrapped mod 2 pi. Rotating B and C by their own cumulative angle is the complex diagonal SSM in a rotating
      frame, so the real SSD form still applies;
    - B and C RMS-normalised, then a per-head bias (initialised to 1); no short convolution;
    - output: RMSNorm(y * SiLU(z)) (the gated norm of the reference mamba3_simple; the official module's
      default gates without a norm), then a linear map to `hidden` (d_inner = expand * hidden).

    The state carries, besides h, the cumulative angle and the last step's rotated B and x, which the
    trapezoid's beta term reads at the next step (so a window split in two equals one window).

    `run` is the chunked SSD: within a chunk the quadratic form, y = ((C B^T) * L) X with L the masked
    segment-sum of log decays, here over 2C "keys" (gamma_s B_s with x_s, and beta_s B_{s-1} with
    x_{s-1}) sharing one decay matrix; between chunks, the state handed on. `step` is the per-step scan.

    Left out: MIMO (the paper's rank-r B and x; this is the SISO model), the fused kernels and
    variable-length packing. Checked against the paper's equations and state-spaces/mamba's modules;
    the tests hold it to an explicitly complex-valued trapezoidal recurrence.
    """

    kind = "mamba3"

    def __init__(
        self, input_dim: int, hidden: int, heads: int = 4, d_state: int = 16, expand: int = 2
    ) -> None:
        super().__init__(input_dim, hidden)
        inner = expand * hidden
        if inner % heads or d_state % 2:
            raise ValueError(
                f"mamba3: expand * hidden {inner} must divide into {heads} heads, d_state be even"
            )
        self.heads, self.head_dim, self.d_state = heads, inner // heads, d_state
        self.angles = max(1, d_state // 4)  # rotary pairs: half of the state dimensions
        self.in_proj = nn.Linear(input_dim, 2 * inner + 2 * d_state + 3 * heads + self.angles, bias=False)
        self.dt_bias = nn.Parameter(_inverse_softplus_dt(heads))
        self.B_norm = nn.RMSNorm(d_state, eps=1e-5)
        self.C_norm = nn.RMSNorm(d_state, eps=1e-5)
        self.B_bias = nn.Parameter(torch.ones(heads, d_state))
        self.C_bias = nn.Parameter(torch.ones(heads, d_state))
        self.D = nn.Parameter(torch.ones(heads))
        self.norm = nn.RMSNorm(inner, eps=1e-5)
        self.out = nn.Linear(inner, hidden, bias=False)

    def initial(self, batch: int, device: torch.device | str | None = None) -> State:
        h, n, p = self.heads, self.d_state, self.head_dim
        return (
            self._zeros(batch, h, n, p, device=device),  # h
            self._zeros(batch, h, self.angles, device=device),  # Theta
            self._zeros(batch, h, n, device=device),  # the previous step's rotated B
            self._zeros(batch, h, p, device=device),  # the previous step's x
        )

    def _project(self, x: Tensor) -> tuple[Tensor, ...]:
        """x (B, T, I) -> z (B, T, inner); xs (B, T, H, P); B, C (B, T, H, N) unrotated; log alpha, dt,
        lambda (B, T, H); angle increments (B, T, H, S)."""
        h, n, inner = self.heads, self.d_state, self.heads * self.head_dim
        z, xs, b, c, dt, a, lam, theta = self.in_proj(x).split(
            [inner, inner, n, n, h, h, h, self.angles], dim=-1
        )
        dt = F.softplus(dt + self.dt_bias)
        log_alpha = dt * (-F.softplus(a)).clamp(max=-1e-4)
        b = self.B_norm(b)[..., None, :] + self.B_bias
        c = self.C_norm(c)[..., None, :] + self.C_bias
        increment = math.pi * torch.tanh(theta)[..., None, :] * dt[..., None]
        return z, xs.unflatten(-1, (h, -1)), b, c, log_alpha, dt, torch.sigmoid(lam), increment

    def _output(self, y: Tensor, xs: Tensor, z: Tensor) -> Tensor:
        y = (y + self.D[:, None] * xs).flatten(-2)
        return self.out(self.norm(y * F.silu(z)))

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        h, angle, b_prev, x_prev = state
        z, xs, b, c, log_alpha, dt, lam, increment = (t[:, 0] for t in self._project(x[:, None]))
        angle = torch.remainder(angle + increment, 2 * math.pi)
        b, c = _rotate(b, angle), _rotate(c, angle)
        alpha = log_alpha.exp()
        gamma, beta = lam * dt, (1 - lam) * dt * alpha
        h = (
            alpha[..., None, None] * h
            + beta[..., None, None] * b_prev[..., :, None] * x_prev[..., None, :]
            + gamma[..., None, None] * b[..., :, None] * xs[..., None, :]
        )
        y = torch.einsum("bhnp,bhn->bhp", h, c)
        return self._output(y, xs, z), (h, angle, b, xs)

    def run(self, x: Tensor, state: State, *, chunk: int = 64) -> tuple[Tensor, State]:
        h, angle0, b_prev0, x_prev0 = state
        steps = x.shape[1]
        z, xs, b, c, log_alpha, dt, lam, increment = self._project(x)
        # The running angle in float64, wrapped before it returns to float32: over a long window a float32
        # cumsum reaches hundreds of radians and loses the digits that step's wrap-every-step keeps.
        angle = torch.remainder(angle0.double()[:, None] + increment.double().cumsum(1), 2 * math.pi)
        angle = angle.to(increment.dtype)
        b, c = _rotate(b, angle), _rotate(c, angle)
        gamma, beta = lam * dt, (1 - lam) * dt * log_alpha.exp()
        b_prev = torch.cat([b_prev0[:, None], b[:, :-1]], dim=1)  # B_{t-1}, x_{t-1}: the trapezoid's left end
        x_prev = torch.cat([x_prev0[:, None], xs[:, :-1]], dim=1)
        # Two writes per step with one decay: keys (gamma B_t, beta B_{t-1}), values (x_t, x_{t-1}).
        keys = _split_chunks(torch.cat([gamma[..., None] * b, beta[..., None] * b_prev], dim=-1), chunk)
        values = _split_chunks(torch.cat([xs, x_prev], dim=-1), chunk)
        keys = torch.cat(keys.split(self.d_state, dim=-1), dim=-2)  # (B, H, n, 2C, N)
        values = torch.cat(values.split(self.head_dim, dim=-1), dim=-2)  # (B, H, n, 2C, P)
        cs = _split_chunks(c, chunk)  # (B, H, n, C, N)
        ac = _split_chunks(log_alpha, chunk).cumsum(-1)  # (B, H, n, C)
        decay = _decay_matrix(ac).repeat(1, 1, 1, 1, 2)  # both writes of step s decay alike
        intra = ((cs @ keys.transpose(-1, -2)) * decay) @ values  # (B, H, n, C, P)
        c_start = cs * ac.exp()[..., None]
        writes = (keys * (ac[..., -1:] - ac).exp().repeat(1, 1, 1, 2)[..., None]).transpose(-1, -2) @ values
        end = ac[..., -1].exp()[..., None, None]
        outs = []
        for i in range(cs.shape[2]):
            outs.append(intra[:, :, i] + c_start[:, :, i] @ h)
            h = end[:, :, i] * h + writes[:, :, i]
        y = _merge_chunks(torch.stack(outs, dim=2), steps)
        return self._output(y, xs, z), (h, angle[:, -1], b[:, -1], xs[:, -1])


# --- building and sizing ---

_CELLS: dict[str, type[MemoryCell]] = {
    "gru": GRUMemory,
    "gdn2": GatedDeltaNet,
    "mamba3": Mamba3,
    "none": NoMemory,
}


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
