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


def test_idle_windows_are_thinned_by_a_seeded_draw_and_active_ones_all_kept() -> None:
    idle = [
        frozenset({0, 2, 3, 5}),
        frozenset(),
        frozenset(range(12)),
        frozenset({0}),
        frozenset(),
        frozenset({4}),
    ]
    everything = {(s, i) for s, n in enumerate(COUNTS) for i in range(n)}
    active = {(s, i) for s, i in everything if i not in idle[s]}

    def emitted(keep: float, seed: int = 0, epoch: int = 0, workers: int = 0) -> set:
        plans = epoch_plan(COUNTS, workers, seed, epoch, open_sessions=2, buffer=5, idle=idle, idle_keep=keep)
        refs = [(r.session, r.span) for p in plans for r in p.emission]
        assert len(refs) == len(set(refs))  # each kept window once
        return set(refs)

    assert emitted(1.0) == everything
    assert emitted(0.0) == active
    half = emitted(0.5)
    assert active < half < everything
    # Seeded: the same seed and epoch keep the same windows whatever the workers; others keep others.
    assert half == emitted(0.5, workers=3)
    assert half != emitted(0.5, epoch=1) or half != emitted(0.5, seed=1)
    # Over many epochs about half the idle windows are kept each time.
    idle_count = len(everything - active)
    kept = [len(emitted(0.5, epoch=e) - active) for e in range(40)]
    assert 0.35 * idle_count < sum(kept) / len(kept) < 0.65 * idle_count
    # Without activity known (idle=None) every window plays.
    assert len([r for p in epoch_plan(COUNTS, 0, 0, 0, idle_keep=0.0) for r in p.emission]) == sum(COUNTS)
    with pytest.raises(ValueError, match="idle_keep"):
        epoch_plan(COUNTS, 0, 0, 0, idle=idle, idle_keep=1.5)
