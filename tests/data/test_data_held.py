"""Held windows: a window compressed and decompressed is the same bytes; the store's pending windows,
rollback, and a switch from raw to compressed."""

from __future__ import annotations

import numpy as np
import pytest

from hoi4_arena.data.held import HeldWindows, WindowCodec
from hoi4_arena.data.windows import Window


def window(seed: int, length: int = 6, clip: int = 1) -> dict[str, np.ndarray]:
    """A window's arrays: flat screens with a few changes between decisions, uint8 wrapping both ways."""
    rng = np.random.default_rng(seed)
    screens = np.repeat(rng.integers(0, 256, (1, 12, 20, 3), np.uint8), length, axis=0)
    for d in range(1, length):
        screens[d:, rng.integers(12), :] = rng.integers(0, 256, (20, 3))  # a row repainted from d on
    screens[:, 0, 0] = np.array([0, 255] * length, np.uint8)[:length, None]  # 0 after 255, 255 after 0
    global_view = np.stack([screens] * clip, axis=1) if clip > 1 else screens
    return {
        "global_view": global_view,
        "quadrants": np.stack([screens[:, :6, :10]] * 4, axis=1),
        "fovea": screens[:, :8, :8].copy(),
        "speed": rng.integers(1, 6, length),
        "pointer": rng.integers(0, 1024, (length, 2)),
        "tokens": rng.integers(0, 98, (length, 8, 3)),
        "fed": rng.integers(0, 98, (length, 8, 3)),
        "loss_mask": rng.random(length) < 0.5,
        "region": rng.random(length) < 0.5,
        "burst": rng.random(length) < 0.5,
        "pressed_after_move": rng.random(length) < 0.5,
        "previous": rng.integers(0, 98, (8, 3)),
        "held": rng.random((length, 47)) < 0.1,
    }


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].tobytes() == b[k].tobytes() for k in a
    )


@pytest.mark.parametrize("clip", [1, 8])
def test_a_compressed_window_decompresses_to_the_same_bytes(clip: int) -> None:
    arrays = [window(seed, clip=clip) for seed in range(3)]
    codec = WindowCodec.of(arrays[0])
    assert [name for name, _, _ in codec.shapes] == list(Window.ARRAYS)
    assert codec.raw_bytes == sum(a.nbytes for a in arrays[0].values())
    out = codec.empty(3)
    frames = [codec.encode(a) for a in arrays]
    for row, frame in enumerate(frames):
        codec.decode_into(frame, out, row)
    assert same(out, {k: np.stack([a[k] for a in arrays]) for k in arrays[0]})
    assert all(len(frame) < codec.raw_bytes / 4 for frame in frames)  # the deltas are mostly zeros
    with pytest.raises(ValueError, match="fovea"):
        codec.encode({**arrays[0], "fovea": arrays[0]["fovea"][:, :4]})


def test_the_store_holds_raw_switches_to_compressed_and_lets_pending_windows_go() -> None:
    arrays = {("s", i): window(i) for i in range(5)}
    held = HeldWindows()
    for key in list(arrays)[:2]:
        held.add(key, arrays[key])
    held.commit()
    raw = held.nbytes
    assert raw == 2 * WindowCodec.of(arrays["s", 0]).raw_bytes == held.raw_nbytes
    held.add(("s", 2), arrays["s", 2])
    held.compress()  # the committed windows stay committed, the pending one pending
    assert held.compressed and len(held) == 3 and 0 < held.pending_nbytes < held.nbytes < raw
    assert held.raw_nbytes == 3 * WindowCodec.of(arrays["s", 0]).raw_bytes
    committed = held.nbytes - held.pending_nbytes
    held.rollback()
    assert len(held) == 2 and held.nbytes == committed
    held.add(("s", 3), arrays["s", 3])
    held.add(("s", 4), arrays["s", 4])
    held.commit()
    keys = [("s", 4), ("s", 0), ("s", 3)]
    assert same(held.stack(keys), {k: np.stack([arrays[key][k] for key in keys]) for k in Window.ARRAYS})
    raw_store = HeldWindows()
    for key in keys:
        raw_store.add(key, arrays[key])
    assert same(raw_store.stack(keys), held.stack(keys))
