"""The epoch plan: every window once, sessions in order inside, seeded, bounded by the buffer."""

from __future__ import annotations

import pytest

from hoi4_arena.data.shuffle import WindowRef, epoch_plan, ordered_plan, sample_refs

COUNTS = [7, 3, 12, 1, 9, 5]


@pytest.mark.parametrize("workers", [0, 1, 2, 4, 8])
def test_every_window_is_emitted_once_per_epoch_across_workers(workers: int) -> None:
    plans = epoch_plan(COUNTS, workers, seed=3, epoch=1, open_sessions=2, buffer=5)
    assert len(plans) == max(workers, 1)
    emitted = [ref for plan in plans for ref in plan.emission]
    assert sorted(emitted, key=lambda r: (r.session, r.span)) == [
        WindowRef(s, i) for s, n in enumerate(COUNTS) for i in range(n)
    ]
    shares = [set(plan.sessions) for plan in plans]
    assert sum(len(s) for s in shares) == len(COUNTS)  # each session played by exactly one worker
    for plan in plans:
        assert sorted(plan.production, key=lambda r: (r.session, r.span)) == sorted(
            plan.emission, key=lambda r: (r.session, r.span)
        )
        assert {r.session for r in plan.emission} <= set(plan.sessions)


def test_a_session_is_cut_in_order_and_only_open_sessions_interleave() -> None:
    plan = epoch_plan(COUNTS, 0, seed=0, epoch=0, open_sessions=2, buffer=4)[0]
    spans: dict[int, list[int]] = {}
    for ref in plan.production:
        spans.setdefault(ref.session, []).append(ref.span)
    assert all(v == list(range(COUNTS[s])) for s, v in spans.items())
    # At most two sessions are in progress at any point of the production order.
    for k in range(len(plan.production)):
        started = {r.session for r in plan.production[: k + 1]}
        finished = {s for s in started if sum(r.session == s for r in plan.production[: k + 1]) == COUNTS[s]}
        assert len(started - finished) <= 2


def test_the_shuffle_buffer_never_emits_a_window_before_it_is_produced_nor_holds_more_than_its_size() -> None:
    buffer = 6
    plan = epoch_plan(COUNTS, 0, seed=1, epoch=0, buffer=buffer)[0]
    produced_at = {ref: i for i, ref in enumerate(plan.production)}
    for i, ref in enumerate(plan.emission):
        # The i-th emission happens once min(i + buffer, total) windows were produced.
        assert produced_at[ref] < min(i + buffer, len(plan.production))
    assert plan.emission != plan.production  # it does shuffle


def test_the_plan_is_a_function_of_seed_and_epoch() -> None:
    a = epoch_plan(COUNTS, 2, seed=5, epoch=3)
    assert a == epoch_plan(COUNTS, 2, seed=5, epoch=3)
    assert a != epoch_plan(COUNTS, 2, seed=6, epoch=3)
    assert a != epoch_plan(COUNTS, 2, seed=5, epoch=4)


def test_ordered_plans_and_samples() -> None:
    refs = sample_refs(COUNTS, 10, seed=0)
    assert len(refs) == 10 and refs == sample_refs(COUNTS, 10, seed=0)
    assert (
        sample_refs(COUNTS, 0, seed=0) == sample_refs(COUNTS, 10_000, seed=0)
        and len(sample_refs(COUNTS, 0, 0)) == 37
    )
    plans = ordered_plan(refs, 2)
    assert sorted((r.session, r.span) for p in plans for r in p.emission) == sorted(
        (r.session, r.span) for r in refs
    )
    for plan in plans:
        assert list(plan.emission) == sorted(plan.emission, key=lambda r: (r.session, r.span))
