"""Cutting one session's decisions into training windows, as the video plays.

A window is `lead_in + window` consecutive decisions that the policy runs through its memory from a
fresh state. Only the decisions of the window's *region* carry loss; the ones before it (the lead-in)
only warm the memory up. Regions partition the session: region k is decisions [k * window,
(k + 1) * window), the last one shorter. So every decision is scored exactly once per epoch, whatever
the lead-in.

Where a region's span would start before the session (the first regions) it starts at decision 0 and
the extra decisions after the region are fed without loss; the last region's span ends at the last
decision, so its extra context comes before it. A session shorter than a span is padded at the end with
blank, loss-free decisions (padding after the last real decision cannot change its scores).

`cut_windows` turns a stream of `DecisionSample`s (decode.py) into `Window`s in span order while
keeping only the decisions that later spans still need, so a session is decoded once, front to back.
Encoders that read the 8-frame global clip get, for each decision, the global views of it and the 7
decisions before it (the first decision repeated before the session starts: at play time the policy
also starts with a clip of one repeated screen).

Try: .venv/bin/python -c "from hoi4_arena.data.windows import plan_spans; print(plan_spans(40, 16, 4))"
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from hoi4_arena.data.decode import DecisionSample
from hoi4_arena.screen.tokens import PRESSES


@dataclass(frozen=True)
class Span:
    """Which decisions one window feeds, and which of them carry loss."""

    start: int
    """First decision fed through the memory."""
    length: int
    """Decisions fed (lead-in + window); past the session's end they are padding."""
    first: int
    """First decision of the region (with loss)."""
    stop: int
    """One past the region's last decision."""

    @property
    def end(self) -> int:
        return self.start + self.length


def plan_spans(decisions: int, window: int, lead_in: int = 0) -> list[Span]:
    """The spans of a session of `decisions` decisions (see the module docstring)."""
    if window < 1 or lead_in < 0:
        raise ValueError(f"window must be >= 1 and lead_in >= 0, got {window} and {lead_in}")
    length = window + lead_in
    spans = []
    for first in range(0, decisions, window):
        stop = min(first + window, decisions)
        start = 0 if decisions <= length else max(0, min(first - lead_in, decisions - length))
        spans.append(Span(start, length, first, stop))
    return spans


def idle_spans(spans: list[Span], active: tuple[int, ...] | None) -> frozenset[int]:
    """Indices of the spans whose region holds none of the `active` decisions (none when not known)."""
    if active is None:
        return frozenset()
    marks = np.zeros(max((span.stop for span in spans), default=0) + 1, np.int64)
    index = np.asarray([d for d in active if d < len(marks) - 1], np.int64)
    np.add.at(marks, index + 1, 1)
    before = np.cumsum(marks)  # before[d]: active decisions before decision d
    return frozenset(i for i, span in enumerate(spans) if before[span.stop] == before[span.first])


@dataclass
class Window:
    """One training window's arrays; leading dim L = lead_in + window decisions."""

    session: str
    """The session's id."""
    span: int
    """Index of the span in its session's plan."""
    start: int
    """Decision index of the first decision fed."""
    global_view: np.ndarray
    """uint8 (L, h, w, 3), or (L, clip, h, w, 3) for clip encoders."""
    quadrants: np.ndarray
    """uint8 (L, 4, h, w, 3)."""
    fovea: np.ndarray
    """uint8 (L, f, f, 3)."""
    speed: np.ndarray
    """int64 (L,) game speed 1..5."""
    pointer: np.ndarray
    """int64 (L, 2) pointer lattice (x, y) when each decision began."""
    tokens: np.ndarray
    """int64 (L, 8, 3) the demonstrated tokens (dropped keys removed): the targets."""
    fed: np.ndarray
    """int64 (L, 8, 3) the tokens each decision sent (`DecisionSample.fed`), fed to the memory as the
    next decision's previous action: `tokens` except in expert-labelled sessions."""
    loss_mask: np.ndarray
    """bool (L,): in the region, a real decision, and trainable (not a burst, ...)."""
    region: np.ndarray
    """bool (L,): in the region and a real decision (what the window is responsible for)."""
    burst: np.ndarray
    """bool (L,): more than eight inputs (masked)."""
    pressed_after_move: np.ndarray
    """bool (L,): pressed a button after a move in the same decision (masked with look-before-click)."""
    previous: np.ndarray
    """int64 (8, 3): the tokens the decision before `start` sent (its `fed`; no-ops at the session's
    start)."""
    held: np.ndarray
    """bool (L, len(PRESSES)): the buttons and keys held down when each decision began
    (`DecisionSample.held`; nothing for padding)."""

    ARRAYS = (
        "global_view",
        "quadrants",
        "fovea",
        "speed",
        "pointer",
        "tokens",
        "fed",
        "loss_mask",
        "region",
        "burst",
        "pressed_after_move",
        "previous",
        "held",
    )

    @property
    def key(self) -> tuple[str, int]:
        return self.session, self.span


def _stack_window(
    session: str,
    index: int,
    span: Span,
    samples: dict[int, DecisionSample],
    clips: dict[int, tuple[np.ndarray, ...]],
    previous: np.ndarray,
    speed: int,
    clip: int,
) -> Window:
    rows = [samples.get(d) for d in range(span.start, span.end)]  # None: padding past the end
    real = next(s for s in rows if s is not None)
    blank = {name: np.zeros_like(view) for name, view in real.views.items()}

    def view(sample: DecisionSample | None, name: str) -> np.ndarray:
        return blank[name] if sample is None else sample.views[name]

    if clip > 1:
        global_view = np.stack(
            [np.stack(clips[s.index]) if s is not None else np.stack([blank["global"]] * clip) for s in rows]
        )
    else:
        global_view = np.stack([view(s, "global") for s in rows])
    region = np.array([s is not None and span.first <= s.index < span.stop for s in rows])
    trainable = np.array([s is not None and s.trainable for s in rows])
    noop = np.zeros((8, 3), np.int64)
    return Window(
        session=session,
        span=index,
        start=span.start,
        global_view=global_view,
        quadrants=np.stack([view(s, "quadrants") for s in rows]),
        fovea=np.stack([view(s, "fovea") for s in rows]),
        speed=np.array([speed if s is None else s.speed for s in rows], np.int64),
        pointer=np.array([(0, 0) if s is None else s.pointer for s in rows], np.int64),
        tokens=np.stack([noop if s is None else s.tokens for s in rows]),
        fed=np.stack([noop if s is None else s.fed for s in rows]),
        loss_mask=region & trainable,
        region=region,
        burst=np.array([s is not None and s.burst for s in rows]),
        pressed_after_move=np.array([s is not None and s.pressed_after_move for s in rows]),
        previous=previous,
        held=np.stack(
            [np.zeros(len(PRESSES), bool) if s is None or s.held is None else s.held for s in rows]
        ),
    )


def needed_decisions(spans: list[Span], wanted: set[int] | None, decisions: int, clip: int = 1) -> np.ndarray:
    """bool (decisions,): which decisions' views the wanted spans read (all spans when None)."""
    need = np.zeros(decisions, bool)
    for index, span in enumerate(spans):
        if wanted is None or index in wanted:
            # A clip reads the global views of the clip - 1 decisions before the span too.
            need[max(0, span.start - (clip - 1)) : min(span.end, decisions)] = True
    return need


def cut_windows(
    samples: Iterator[DecisionSample],
    spans: list[Span],
    session: str,
    *,
    wanted: set[int] | None = None,
    clip: int = 1,
) -> Iterator[tuple[int, Window | None]]:
    """(span index, window) for every span in order, as the decisions arrive.

    Spans not in `wanted` come out as (index, None) and cost nothing beyond decoding: give the decoder
    `needed_decisions(...)` so that decisions no wanted span reads arrive without views. `samples`
    must yield decisions 0, 1, ... in order; spans that reach past the last decision come out, padded,
    when the stream ends (a stream shorter than planned -- a video that ends early -- is the caller's
    to detect). `clip` > 1 builds the global clip of each decision (clip encoders).
    """
    kept: dict[int, DecisionSample] = {}
    recent: dict[int, np.ndarray] = {}  # the last `clip` global views, by decision
    clips: dict[int, tuple[np.ndarray, ...]] = {}  # decision -> its clip (references, stacked late)
    previous: dict[int, np.ndarray] = {}  # decision -> its tokens, for the span that starts after it
    starts = {span.start for span in spans}
    next_span = 0
    speed = 1
    last = -1

    def ready(upto: int) -> Iterator[tuple[int, Window | None]]:
        nonlocal next_span
        while next_span < len(spans) and spans[next_span].end - 1 <= upto:
            span = spans[next_span]
            if wanted is not None and next_span not in wanted:
                yield next_span, None
            else:
                before = previous.pop(span.start - 1, None)
                if before is None:
                    before = np.zeros((8, 3), np.int64)
                yield next_span, _stack_window(session, next_span, span, kept, clips, before, speed, clip)
            next_span += 1
            # Spans start in order: what the next one does not read, no later one reads.
            earliest = spans[next_span].start if next_span < len(spans) else None
            for d in [d for d in kept if earliest is None or d < earliest]:
                del kept[d]
                clips.pop(d, None)

    for sample in samples:
        if sample.index != last + 1:
            raise ValueError(f"decisions must arrive in order: {sample.index} after {last}")
        last = sample.index
        speed = sample.speed
        if sample.index + 1 in starts:
            previous[sample.index] = sample.fed
        if sample.views is not None:
            if clip > 1:
                recent[sample.index] = sample.views["global"]
                for d in [d for d in recent if d <= sample.index - clip]:
                    del recent[d]
                members = [max(0, sample.index - back) for back in range(clip - 1, -1, -1)]
                # Complete for every decision of a wanted span (needed_decisions asks for the views
                # before it); a decision only near one may lack some, and no window reads its clip.
                clip_of = tuple(recent[m] for m in members) if all(m in recent for m in members) else None
            # The next span ends at or after this decision (else it came out already), and spans start
            # in order: the decision is read by a later span iff it lies at or after the next start.
            if next_span < len(spans) and sample.index >= spans[next_span].start:
                kept[sample.index] = sample
                if clip > 1 and clip_of is not None:
                    clips[sample.index] = clip_of
        yield from ready(sample.index)
    # Spans that run past the last decision come out padded.
    yield from ready(max((s.end for s in spans), default=0))
