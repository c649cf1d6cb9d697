"""Spans partition a session into scored regions; windows carry the right decisions, masks and clips."""

from __future__ import annotations

import numpy as np
import pytest

from hoi4_arena.data.decode import DecisionSample
from hoi4_arena.data.windows import cut_windows, idle_spans, needed_decisions, plan_spans


@pytest.mark.parametrize("decisions", [1, 5, 16, 17, 40, 63])
@pytest.mark.parametrize(("window", "lead_in"), [(16, 0), (16, 4), (4, 4), (5, 11)])
def test_regions_score_every_decision_exactly_once(decisions: int, window: int, lead_in: int) -> None:
    spans = plan_spans(decisions, window, lead_in)
    scored = np.zeros(decisions, int)
    for span in spans:
        assert span.length == window + lead_in
        assert span.start <= span.first < span.stop <= span.end
        assert span.stop - span.first <= window
        scored[span.first : span.stop] += 1
        if decisions >= span.length:
            assert span.end <= decisions  # padding only when the session is shorter than a span
            # As much lead-in as the session has before the region, never less.
            assert span.first - span.start >= min(lead_in, span.first)
        else:
            assert span.start == 0
    assert (scored == 1).all()


def sample(index: int, *, trainable: bool = True, burst: bool = False) -> DecisionSample:
    """A decision whose pixels and tokens encode its index (index 0..250)."""
    views = {
        "global": np.full((2, 3, 3), index, np.uint8),
        "quadrants": np.full((4, 2, 2, 3), index, np.uint8),
        "fovea": np.full((2, 2, 3), index, np.uint8),
    }
    tokens = np.zeros((8, 3), np.int64)
    tokens[0] = (1, index, index)
    return DecisionSample(index, views, tokens, (index, index), 3, burst, False, True, trainable)


@pytest.mark.parametrize(("decisions", "window", "lead_in"), [(23, 5, 3), (7, 4, 6), (16, 16, 0)])
def test_windows_hold_their_span_with_lead_in_masks_and_previous_tokens(decisions, window, lead_in) -> None:
    spans = plan_spans(decisions, window, lead_in)
    untrainable = {2, 9}
    samples = (sample(i, trainable=i not in untrainable, burst=i == 2) for i in range(decisions))
    out = list(cut_windows(samples, spans, "s"))
    assert [i for i, _ in out] == list(range(len(spans)))
    for (index, window_), span in zip(out, spans, strict=True):
        assert window_.key == ("s", index) and window_.start == span.start
        real = min(span.end, decisions) - span.start
        expected = np.arange(span.start, span.start + real)
        assert (window_.global_view[:real, 0, 0, 0] == expected).all()
        assert (window_.quadrants[:real, 0, 0, 0, 0] == expected).all()
        assert (window_.fovea[:real, 0, 0, 0] == expected).all()
        assert (window_.tokens[:real, 0, 1] == expected).all() and (
            window_.pointer[:real, 0] == expected
        ).all()
        # Padding past the end: blank, no-op, no loss.
        assert (window_.global_view[real:] == 0).all() and (window_.tokens[real:] == 0).all()
        in_region = (np.arange(span.start, span.end) >= span.first) & (
            np.arange(span.start, span.end) < span.stop
        )
        in_region &= np.arange(span.start, span.end) < decisions
        assert (window_.region == in_region).all()
        trainable = np.array([d not in untrainable for d in range(span.start, span.end)])
        assert (window_.loss_mask == (in_region & trainable)).all()
        assert window_.burst[:real].tolist() == [d == 2 for d in range(span.start, span.start + real)]
        # The previous action is the demonstrated one of the decision before the span.
        before = span.start - 1
        assert window_.previous[0].tolist() == ([1, before, before] if before >= 0 else [0, 0, 0])


def test_clips_repeat_the_first_screen_and_end_with_the_current_one() -> None:
    spans = plan_spans(12, 4, 0)
    out = dict(cut_windows((sample(i) for i in range(12)), spans, "s", clip=8))
    clips = out[0].global_view[:, :, 0, 0, 0]  # (L, clip)
    assert clips[0].tolist() == [0] * 8
    assert clips[3].tolist() == [0, 0, 0, 0, 0, 1, 2, 3]
    assert out[2].global_view[3, :, 0, 0, 0].tolist() == list(range(4, 12))


def test_unwanted_spans_cost_no_views_and_wanted_ones_are_unchanged() -> None:
    spans = plan_spans(30, 4, 2)
    full = dict(cut_windows((sample(i) for i in range(30)), spans, "s", clip=8))
    wanted = {1, 5}
    need = needed_decisions(spans, wanted, 30, clip=8)
    assert need.sum() < 30
    samples = (
        sample(i)
        if need[i]
        else DecisionSample(i, None, sample(i).tokens, (i, i), 3, False, False, True, True)
        for i in range(30)
    )
    part = dict(cut_windows(samples, spans, "s", wanted=wanted, clip=8))
    assert set(part) == set(range(len(spans)))
    for index, window_ in part.items():
        if index not in wanted:
            assert window_ is None
            continue
        for name in window_.ARRAYS:
            assert np.array_equal(getattr(window_, name), getattr(full[index], name)), name


def test_decisions_out_of_order_are_refused() -> None:
    spans = plan_spans(4, 2)
    with pytest.raises(ValueError, match="in order"):
        list(cut_windows(iter([sample(0), sample(2)]), spans, "s"))


@pytest.mark.parametrize(("window", "lead_in"), [(16, 0), (8, 4), (1, 0)])
def test_idle_spans_are_those_whose_region_holds_no_input(window: int, lead_in: int) -> None:
    active = (0, 9, 10, 33, 34, 35, 61)
    spans = plan_spans(62, window, lead_in)
    idle = idle_spans(spans, active)
    for i, span in enumerate(spans):
        # Activity in the lead-in (before the region) or after it does not count.
        assert (i in idle) == (not any(span.first <= d < span.stop for d in active))
    assert idle_spans(spans, None) == frozenset()  # unknown activity: nothing is idle
    assert idle_spans(spans, ()) == frozenset(range(len(spans)))
