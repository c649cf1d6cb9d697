"""The seeded order of an epoch's windows: which worker plays which sessions, how they interleave, and
the shuffle buffer, all decided before any frame is decoded.

For epoch e of a run seeded s:
0. With `idle_keep` < 1, windows whose region holds no input (`idle`) are thinned: each is kept with
   probability `idle_keep` by a draw seeded (s, e), one per window in a fixed order, so an epoch keeps
   every window with activity and another seeded share of the idle ones; every other step plays only
   the kept windows.
1. The sessions are permuted by a generator seeded (s, e) and dealt to the workers in turn: worker w
   plays sessions w, w + W, w + 2W, ... of the permutation, so every window is read once per epoch.
2. Each worker keeps `open_sessions` sessions playing at once; each step a seeded draw picks which of
   them gives its next window (windows of one session come out in order: the video is decoded front to
   back). A finished session makes room for the next in its share. This is the *production* order.
3. Produced windows enter a shuffle buffer of `buffer` windows; once it is full, each new window pushes
   out a uniformly drawn one. This is the *emission* order, cut into batches of `batch` windows.

Because the plan depends only on the seed, the epoch, the sessions' window counts (and which windows
are idle) and these settings,
it is the same in every run: a worker process and the training thread compute the same plan, a
resumed run skips exactly the batches it had used, and the emitted order is the same for the same
seed. The executor (loader.py) follows the plan, decoding each session once.

Try: .venv/bin/python -c "from hoi4_arena.data.shuffle import epoch_plan; print(epoch_plan([3, 2], 1, 0, 0))"
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WindowRef:
    """A window by its session's position in the data set and its span's index in that session."""

    session: int
    span: int


@dataclass(frozen=True)
class WorkerPlan:
    """What one worker does in one epoch."""

    sessions: tuple[int, ...]
    """Its share of the sessions, in the order it opens them."""
    production: tuple[WindowRef, ...]
    """The order in which it cuts windows out of its sessions."""
    emission: tuple[WindowRef, ...]
    """The order in which the windows leave its shuffle buffer; batches are consecutive runs of it."""

    def batches(self, batch: int) -> int:
        return -(-len(self.emission) // batch)


def _generator(*keys: int) -> np.random.Generator:
    return np.random.default_rng([int(k) for k in keys])


def deal_sessions(count: int, workers: int, seed: int, epoch: int) -> list[list[int]]:
    """Each worker's share of `count` sessions for an epoch (a seeded permutation dealt in turn)."""
    order = _generator(seed, epoch).permutation(count).tolist()
    return [order[w::workers] for w in range(workers)]


def interleave(
    sessions: list[int], spans: dict[int, list[int]], open_sessions: int, rng: np.random.Generator
) -> list[WindowRef]:
    """Production order: `open_sessions` sessions at a time, a seeded draw picks who gives the next window."""
    waiting = [s for s in sessions if spans[s]]
    playing: list[list] = []  # [session, position in its span list]
    out: list[WindowRef] = []
    while waiting or playing:
        while waiting and len(playing) < open_sessions:
            playing.append([waiting.pop(0), 0])
        i = int(rng.integers(len(playing)))
        session, position = playing[i]
        out.append(WindowRef(session, spans[session][position]))
        playing[i][1] += 1
        if playing[i][1] == len(spans[session]):
            playing.pop(i)
    return out


def shuffle_buffer(production: list[WindowRef], size: int, rng: np.random.Generator) -> list[WindowRef]:
    """Emission order through a buffer of `size` windows (size 1 keeps the production order)."""
    buffer: list[WindowRef] = []
    out: list[WindowRef] = []

    def release() -> None:
        j = int(rng.integers(len(buffer)))
        out.append(buffer[j])
        buffer[j] = buffer[-1]
        buffer.pop()

    for ref in production:
        buffer.append(ref)
        if len(buffer) >= size:
            release()
    while buffer:
        release()
    return out


def kept_spans(
    spans_per_session: list[int],
    idle: list[frozenset[int]] | None,
    idle_keep: float,
    seed: int,
    epoch: int,
) -> dict[int, list[int]]:
    """Each session's span indices an epoch plays: all of them, or with `idle_keep` < 1 every span not in
    `idle[session]` and a seeded share of those that are (one draw per span, sessions in order)."""
    if not 0 <= idle_keep <= 1:
        raise ValueError(f"idle_keep must lie in 0..1, got {idle_keep}")
    if idle is None or idle_keep >= 1:
        return {s: list(range(n)) for s, n in enumerate(spans_per_session)}
    if len(idle) != len(spans_per_session):
        raise ValueError(f"idle spans for {len(idle)} sessions, window counts for {len(spans_per_session)}")
    rng = _generator(seed, epoch, 0x1D1E)
    kept = {}
    for s, n in enumerate(spans_per_session):
        draws = rng.random(n)
        kept[s] = [i for i in range(n) if i not in idle[s] or draws[i] < idle_keep]
    return kept


def epoch_plan(
    spans_per_session: list[int],
    workers: int,
    seed: int,
    epoch: int,
    *,
    open_sessions: int = 4,
    buffer: int = 64,
    idle: list[frozenset[int]] | None = None,
    idle_keep: float = 1.0,
) -> list[WorkerPlan]:
    """The shuffled plan of a training epoch for `max(workers, 1)` streams (see the module docstring).

    `idle[s]` holds the span indices of session s whose region holds no input; with `idle_keep` < 1 only
    that share of them (seeded by seed and epoch) is played.
    """
    streams = max(workers, 1)
    if open_sessions < 1 or buffer < 1:
        raise ValueError(f"open_sessions and buffer must be >= 1, got {open_sessions} and {buffer}")
    spans = kept_spans(spans_per_session, idle, idle_keep, seed, epoch)
    plans = []
    for w, share in enumerate(deal_sessions(len(spans_per_session), streams, seed, epoch)):
        rng = _generator(seed, epoch, w + 1)
        production = interleave(share, spans, open_sessions, rng)
        plans.append(
            WorkerPlan(tuple(share), tuple(production), tuple(shuffle_buffer(production, buffer, rng)))
        )
    return plans


def ordered_plan(refs: list[WindowRef], workers: int) -> list[WorkerPlan]:
    """A plan without shuffling (evaluation): each worker plays whole sessions in order, one at a time."""
    streams = max(workers, 1)
    sessions = sorted({ref.session for ref in refs})
    plans = []
    for w in range(streams):
        share = sessions[w::streams]
        mine = set(share)
        production = tuple(sorted((r for r in refs if r.session in mine), key=lambda r: (r.session, r.span)))
        plans.append(WorkerPlan(tuple(share), production, production))
    return plans


def sample_refs(spans_per_session: list[int], count: int, seed: int) -> list[WindowRef]:
    """`count` windows drawn without replacement, seeded (all of them when count is 0 or more than there are)."""
    refs = [WindowRef(s, i) for s, n in enumerate(spans_per_session) for i in range(n)]
    if count <= 0 or count >= len(refs):
        return refs
    chosen = _generator(seed, 0x7E57).choice(len(refs), size=count, replace=False)
    return [refs[i] for i in sorted(chosen.tolist())]
