"""The loader: seeded order, workers give the same windows and bytes, exact resume, corrupt sessions."""

from __future__ import annotations

import dataclasses
import logging
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena import allocator
from hoi4_arena.data import loader as loader_module
from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.shuffle import WindowRef
from hoi4_arena.data.sources import find_sessions

SETTINGS = DataSettings(
    DecodeSettings("cpu"), window=4, lead_in=2, batch=3, open_sessions=2, shuffle_windows=5
)


def corrupt_middle(folder: Path) -> None:
    """Zero 20 kB in the middle of the video: frames before it decode, the one there does not."""
    video = folder / "screen.mkv"
    data = bytearray(video.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 20_000] = bytes(20_000)
    video.write_bytes(bytes(data))


@pytest.fixture
def sessions(make_marker, data_dir: Path) -> list:
    for i, frames in enumerate((40, 26, 34)):
        make_marker(f"s{i}", seed=i, frames=frames, keys=1, bursts=1)
    return find_sessions(data_dir, ("scripted",)).train


def collect(loader: WindowLoader, sessions: list, epoch: int = 0, position=None) -> list:
    return list(loader.epoch(sessions, epoch, position))


def by_key(batches: list) -> dict[tuple[str, int], dict[str, np.ndarray]]:
    out = {}
    for batch, _ in batches:
        for row, key in enumerate(batch.keys):
            assert key not in out
            out[key] = {name: array[row] for name, array in batch.arrays.items()}
    return out


def test_the_same_seed_gives_the_same_batches_in_the_same_order(sessions) -> None:
    with WindowLoader(SETTINGS, 0) as loader:
        first, again = collect(loader, sessions), collect(loader, sessions)
        next_epoch = collect(loader, sessions, epoch=1)
    assert [b.keys for b, _ in first] == [b.keys for b, _ in again]
    for (a, _), (b, _) in zip(first, again, strict=True):
        assert all(np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)
    assert [b.keys for b, _ in first] != [b.keys for b, _ in next_epoch]
    # Every window once per epoch: 20 + 13 + 17 decisions in windows of 4.
    assert sorted(by_key(first)) == sorted(by_key(next_epoch))
    assert len(by_key(first)) == 5 + 4 + 5


def test_two_workers_give_the_same_windows_with_the_same_bytes_as_none(sessions) -> None:
    with WindowLoader(SETTINGS, 0) as serial:
        expected = by_key(collect(serial, sessions))
    with WindowLoader(SETTINGS, 2) as loader:
        got = by_key(collect(loader, sessions))
        again = by_key(collect(loader, sessions))  # the workers serve a second pass too
    assert set(got) == set(expected) == set(again)
    for key, arrays in expected.items():
        for name, array in arrays.items():
            assert array.dtype == got[key][name].dtype and array.tobytes() == got[key][name].tobytes(), (
                key,
                name,
            )


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("after", [1, 2])
def test_a_resumed_epoch_gives_the_batches_an_uninterrupted_one_gives(
    sessions, workers: int, after: int
) -> None:
    with WindowLoader(SETTINGS, workers) as loader:
        whole = collect(loader, sessions)
        _, position = whole[after - 1]
    with WindowLoader(SETTINGS, workers) as fresh:  # a new process, as after a kill
        rest = collect(fresh, sessions, position=position)
    assert [b.keys for b, _ in rest] == [b.keys for b, _ in whole[after:]]
    assert [p for _, p in rest] == [p for _, p in whole[after:]]
    for (a, _), (b, _) in zip(rest, whole[after:], strict=True):
        assert all(a.arrays[k].tobytes() == b.arrays[k].tobytes() for k in a.arrays)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_session_corrupt_in_the_middle_is_skipped_with_a_message(
    sessions, workers: int, caplog: pytest.LogCaptureFixture
) -> None:
    with WindowLoader(SETTINGS, 0) as serial:
        expected = by_key(collect(serial, sessions))
    corrupt_middle(Path(sessions[0].path))
    with caplog.at_level(logging.WARNING), WindowLoader(SETTINGS, workers) as loader:
        got = by_key(collect(loader, sessions))
    assert [s.path for s in loader.skipped] == [sessions[0].path]
    assert "does not decode" in loader.skipped[0].reason
    assert any(
        "skipping session" in r.getMessage() and sessions[0].path in r.getMessage() for r in caplog.records
    )
    # The other sessions are read whole; the corrupt one only up to the damage.
    others = {k for k in expected if k[0] != "s0"}
    assert others <= set(got)
    broken = {k for k in got if k[0] == "s0"}
    assert broken < {k for k in expected if k[0] == "s0"}
    for key in got:
        assert all(got[key][n].tobytes() == expected[key][n].tobytes() for n in got[key])


def test_ordered_batches_hold_exactly_the_asked_windows(sessions) -> None:
    refs = [WindowRef(0, 1), WindowRef(2, 0), WindowRef(2, 2), WindowRef(1, 1)]
    with WindowLoader(SETTINGS, 0) as loader:
        keys = [key for batch in loader.ordered(sessions, refs) for key in batch.keys]
    assert keys == [("s0", 1), ("s1", 1), ("s2", 0), ("s2", 2)]


def test_clip_encoders_get_clips(sessions) -> None:
    settings = DataSettings(DecodeSettings("cpu"), window=4, batch=2, clip=8)
    with WindowLoader(settings, 0) as loader:
        batch = next(iter(loader.ordered(sessions, [WindowRef(0, 0), WindowRef(0, 1)])))
    clips = batch.arrays["global_view"]
    assert clips.shape == (2, 4, 8, 72, 128, 3)
    # The clip ends with the decision's own screen and steps back one decision per frame.
    assert np.array_equal(clips[1, 0, -2], clips[0, 3, -1])
    assert np.array_equal(clips[0, 0, 0], clips[0, 0, -1])  # the first screen repeated before the start


@pytest.mark.parametrize("workers", [0, 2])
def test_idle_windows_keep_every_window_with_input_and_a_seeded_share_of_the_rest(
    make_marker, data_dir: Path, workers: int
) -> None:
    games = [make_marker(f"s{i}", seed=i, frames=frames, keys=2) for i, frames in enumerate((40, 30))]
    sessions = find_sessions(data_dir, ("scripted",)).train
    # The sources know which decisions hold input, from the inputs and frames logs alone.
    for game, session in zip(games, sessions, strict=True):
        assert set(session.active) == set(game.clicks) | set(game.keys)
    one = DataSettings(DecodeSettings("cpu"), window=1, batch=2, shuffle_windows=3)
    with WindowLoader(dataclasses.replace(one, idle_windows=0.0), workers) as loader:
        keys = set(by_key(collect(loader, sessions)))
    assert keys == {(s.id, d) for s in sessions for d in s.active}
    with WindowLoader(dataclasses.replace(one, idle_windows=0.5), workers) as loader:
        batches = collect(loader, sessions)
        assert loader.batches_in_epoch(sessions, 0) == len(batches)
        first, again = set(by_key(batches)), set(by_key(collect(loader, sessions)))
        other_epoch = set(by_key(collect(loader, sessions, epoch=1)))
    every = {(s.id, d) for s in sessions for d in range(s.decisions)}
    assert keys < first < every and first == again and first != other_epoch


def same_batches(a: list, b: list) -> bool:
    """The same batches in the same order, with the same positions and bytes."""
    if [(x.keys, w) for x, w in a] != [(y.keys, w) for y, w in b]:
        return False
    return all(
        x.arrays[k].dtype == y.arrays[k].dtype and x.arrays[k].tobytes() == y.arrays[k].tobytes()
        for (x, _), (y, _) in zip(a, b, strict=True)
        for k in x.arrays
    )


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("workers", [0, 2])
def test_held_data_give_exactly_the_batches_streaming_gives(sessions, workers: int, compressed: bool) -> None:
    thinned = dataclasses.replace(SETTINGS, idle_windows=0.5)
    with WindowLoader(thinned, workers) as streaming:
        expected = [collect(streaming, sessions, epoch) for epoch in (0, 1)]
        resumed_from = expected[1][1][1]
        expected_resumed = collect(streaming, sessions, 1, resumed_from)
        refs = [WindowRef(0, 1), WindowRef(2, 0), WindowRef(2, 3)]
        expected_ordered = list(streaming.ordered(sessions, refs))
    held = dataclasses.replace(thinned, hold_gb=0.5, hold_compressed=compressed)
    with WindowLoader(held, workers) as loader:
        counted: list[int] = []
        assert loader.hold(sessions, on_batch=counted.append)
        assert sum(counted) == 5 + 4 + 5 and loader.held_bytes > 0 and loader.held_compressed == compressed
        loader.close()  # from here on no worker may be needed: nothing decodes
        loader._start = lambda: pytest.fail("a held epoch started a worker")  # type: ignore[method-assign]
        assert same_batches(collect(loader, sessions, 0), expected[0])
        assert same_batches(collect(loader, sessions, 1), expected[1])
        assert same_batches(collect(loader, sessions, 1, resumed_from), expected_resumed)
        got = list(loader.ordered(sessions, refs))
        assert same_batches([(b, 0) for b in got], [(b, 0) for b in expected_ordered])
        assert loader.hold(sessions)  # held before: nothing to decode


def test_data_too_large_to_hold_stream_as_before(sessions, caplog) -> None:
    tiny = dataclasses.replace(SETTINGS, hold_gb=1e-6)  # about 1 kB
    with WindowLoader(SETTINGS, 0) as streaming:
        expected = collect(streaming, sessions)
    with WindowLoader(tiny, 0) as loader, caplog.at_level(logging.WARNING):
        assert not loader.hold(sessions)  # not even compressed
        assert "GiB compressed) do not fit" in caplog.text and loader.held_bytes == 0
        assert same_batches(collect(loader, sessions), expected)
    with WindowLoader(SETTINGS, 0) as loader:
        assert not loader.hold(sessions)  # hold_gb 0: never held
    with pytest.raises(Exception, match="hold_gb"):
        dataclasses.replace(SETTINGS, hold_gb=-1.0)


@pytest.mark.parametrize("workers", [0, 2])
def test_data_too_large_to_hold_raw_are_held_compressed(sessions, workers: int, caplog) -> None:
    with WindowLoader(SETTINGS, workers) as streaming:
        expected = [collect(streaming, sessions, epoch) for epoch in (0, 1)]
    raw = 14 * 6 * 212_736  # 14 windows of 6 decisions
    fits_compressed = dataclasses.replace(SETTINGS, hold_gb=raw / 4 / 2**30)
    with WindowLoader(fits_compressed, workers) as loader, caplog.at_level(logging.INFO):
        assert loader.hold(sessions)
        assert "holding them compressed" in caplog.text and loader.held_compressed
        assert loader.held_bytes < raw / 10 and loader.held_raw_bytes > raw
        assert same_batches(collect(loader, sessions, 0), expected[0])
        assert same_batches(collect(loader, sessions, 1), expected[1])
    # hold_compressed=False: held raw or not at all, as before compressed holding existed.
    with WindowLoader(dataclasses.replace(fits_compressed, hold_compressed=False), workers) as loader:
        assert not loader.hold(sessions) and loader.held_bytes == 0


def test_the_fill_maps_large_blocks_and_gives_the_same_batches(sessions, monkeypatch) -> None:
    # The suite's processes set MALLOC_MMAP_THRESHOLD_ (conftest), which the fill leaves alone: unset here.
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    seen = []
    real = loader_module.large_blocks_mapped

    @contextmanager
    def spy(*args, **kwargs):
        with real(*args, **kwargs) as changed:
            seen.append(changed)
            yield changed

    monkeypatch.setattr(loader_module, "large_blocks_mapped", spy)
    with WindowLoader(SETTINGS, 0) as streaming:
        expected = [collect(streaming, sessions, epoch) for epoch in (0, 1)]
    for compressed in (False, True):
        held = dataclasses.replace(SETTINGS, hold_gb=1.0, hold_compressed=compressed)
        with WindowLoader(held, 0) as loader:
            assert loader.hold(sessions) and loader.held_compressed == compressed
            assert same_batches(collect(loader, sessions, 0), expected[0])
            assert same_batches(collect(loader, sessions, 1), expected[1])
    assert seen == [allocator._libc() is not None] * 2  # the fill ran inside the block, once each
