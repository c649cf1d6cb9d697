"""The loader reads the views stored at capture time instead of decoding, and falls back when it must.

Marker sessions are ffv1 (lossless), so stored views and decoded views are the same bytes: every batch
must be equal whichever the loader reads. With stored views it must not decode any video at all.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.data import decode as decode_module
from hoi4_arena.data.decode import DecodeSettings, decode_session
from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.sessions import reader as reader_module
from hoi4_arena.sessions.stored_views import StoredViews, ViewsWriter

SETTINGS = DataSettings(
    DecodeSettings("cpu"), window=4, lead_in=2, batch=3, open_sessions=2, shuffle_windows=5
)
DECODED = dataclasses.replace(SETTINGS, decode=dataclasses.replace(SETTINGS.decode, stored_views=False))


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch) -> None:
    monkeypatch.setattr(decode_module, "_warned", set())  # each test sees its own warnings


@pytest.fixture
def sessions(make_marker, data_dir: Path) -> list:
    for i, frames in enumerate((40, 26, 34)):
        make_marker(f"s{i}", seed=i, frames=frames, keys=1, bursts=1, views=("cpu",))
    return find_sessions(data_dir, ("scripted",)).train


def epoch(settings: DataSettings, sessions: list, workers: int = 0) -> list:
    with WindowLoader(settings, workers) as loader:
        return [batch for batch, _ in loader.epoch(sessions, 0)]


def assert_same_batches(a: list, b: list) -> None:
    assert [x.keys for x in a] == [y.keys for y in b]
    for x, y in zip(a, b, strict=True):
        assert x.arrays.keys() == y.arrays.keys()
        for name in x.arrays:
            np.testing.assert_array_equal(x.arrays[name], y.arrays[name], err_msg=name)


def no_decoding(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the video was decoded")

    monkeypatch.setattr(reader_module, "decode_frames", refuse)


def test_stored_views_give_the_batches_an_ffv1_decode_gives_without_decoding(
    sessions, monkeypatch, caplog
) -> None:
    decoded = epoch(DECODED, sessions)
    no_decoding(monkeypatch)
    with caplog.at_level(logging.WARNING):
        stored = epoch(SETTINGS, sessions)
    assert_same_batches(stored, decoded)
    assert sum(len(b) for b in stored) == 5 + 4 + 5  # every window of 20, 13 and 17 decisions
    assert not caplog.records


def test_clip_windows_from_stored_views_equal_the_decoded_ones(sessions) -> None:
    clip = dataclasses.replace(SETTINGS, clip=8)
    decoded = epoch(dataclasses.replace(clip, decode=DECODED.decode), sessions)
    assert_same_batches(epoch(clip, sessions), decoded)


def test_a_record_that_fails_its_checksum_falls_back_to_decoding_from_there(sessions, caplog) -> None:
    decoded = epoch(DECODED, sessions)
    path = Path(sessions[1].path) / "views-cpu.bin"
    with StoredViews.open(path) as stored:
        middle = stored.records[20]
    data = bytearray(path.read_bytes())
    data[middle.offset + middle.length // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        stored = epoch(SETTINGS, sessions)
    assert_same_batches(stored, decoded)
    (message,) = [r.getMessage() for r in caplog.records]
    assert sessions[1].path in message
    assert (
        "views-cpu.bin: the record of frame 20 fails its checksum; decoding its video from decision"
        in message
    )


def damage_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[20] ^= 0x01
    path.write_bytes(bytes(data))


def other_layout(path: Path) -> None:
    path.unlink()
    small = dataclasses.replace(ViewLayout.named("cpu"), global_size=(36, 64))
    writer = ViewsWriter(path, small, (180, 320))
    writer.close()


def too_few_frames(path: Path) -> None:
    with StoredViews.open(path) as stored:
        end = stored.prefix_end(stored.frames - 3)
    path.write_bytes(path.read_bytes()[:end])


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (damage_header, "views-cpu.bin: its header fails its checksum"),
        (
            other_layout,
            "views-cpu.bin holds views of layout views1-g36x64-q90x160-f64, training uses "
            "views1-g72x128-q90x160-f64",
        ),
        (too_few_frames, "views-cpu.bin holds 23 frames, the session 26"),
        (lambda path: path.unlink(), "its stored views (views-cpu.bin) are missing"),
    ],
)
def test_stored_views_that_do_not_fit_fall_back_to_decoding_with_a_message(
    sessions, caplog, damage, why: str
) -> None:
    decoded = epoch(DECODED, sessions)
    damage(Path(sessions[1].path) / "views-cpu.bin")
    with caplog.at_level(logging.WARNING):
        stored = epoch(SETTINGS, sessions)
        epoch(SETTINGS, sessions)  # a second pass says nothing new
    assert_same_batches(stored, decoded)
    (message,) = [r.getMessage() for r in caplog.records]
    assert message == f"session {sessions[1].path}: {why}; decoding its video instead"


def test_sessions_without_stored_views_decode_as_before_quietly(make_marker, data_dir: Path, caplog) -> None:
    make_marker("plain", frames=20)
    (session,) = find_sessions(data_dir, ("scripted",)).train
    with caplog.at_level(logging.WARNING):
        samples = list(decode_session(session.path, SETTINGS.decode))
    assert len(samples) == 10 and all(s.views is not None for s in samples)
    assert not caplog.records


def test_two_workers_read_stored_views_too(sessions) -> None:
    by_key = {}
    for batch in epoch(DECODED, sessions):
        for row, key in enumerate(batch.keys):
            by_key[key] = {name: array[row] for name, array in batch.arrays.items()}
    for batch in epoch(SETTINGS, sessions, workers=2):
        for row, key in enumerate(batch.keys):
            for name, array in batch.arrays.items():
                np.testing.assert_array_equal(array[row], by_key[key][name])


def test_held_data_from_stored_views_equal_the_decoded_epoch(sessions, monkeypatch) -> None:
    decoded = epoch(DECODED, sessions)
    no_decoding(monkeypatch)
    with WindowLoader(dataclasses.replace(SETTINGS, hold_gb=1.0), 0) as loader:
        assert loader.hold(sessions)
        held = [batch for batch, _ in loader.epoch(sessions, 0)]
    assert_same_batches(held, decoded)
