"""The training windows a loader holds in memory between epochs: as their arrays, or compressed.

Held raw, a window is its arrays (`windows.Window`), 212,736 bytes of views a decision on the cpu layout,
and a batch is `np.stack` of its rows. Held compressed, a window is one zstd frame (level 1) of its arrays
in `Window.ARRAYS` order, each uint8 array (the views) stored as its first decision and then each
decision's difference (mod 256) from the one before it: the screens are flat map colours that change
little from one decision to the next, so the differences are mostly zeros (the stored views' key and
delta records, sessions/stored_views.py, do the same along a whole session). A batch is decompressed
row by row into arrays of the shapes and dtypes raw holding gives, so both give the same bytes. On the
quickstart's demonstrations a window of 8 decisions compresses about 40 times; a batch costs a few
milliseconds to decompress (`bench/hold.py` measures both).

The loader decompresses a batch on the thread that takes it, not in its worker processes: a worker's
decompressed batch crosses a pipe pickled, which costs the training thread more than decompressing it
(bench/hold.py).

Try: .venv/bin/python bench/hold.py --games 8     # raw, compressed and streamed, in one process
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import zstandard

from hoi4_arena.data.windows import Window

Key = tuple[str, int]
"""A window: (session id, span index)."""

LEVEL = 1
"""zstd's level: on the quickstart's windows level 3 is 4% smaller and 30% slower to compress."""


_zstd: dict[str, Any] = {}  # this process's (de)compression contexts, made on first use


def _compressor() -> zstandard.ZstdCompressor:
    if "c" not in _zstd:
        _zstd["c"] = zstandard.ZstdCompressor(level=LEVEL)
    return _zstd["c"]


def _decompressor() -> zstandard.ZstdDecompressor:
    if "d" not in _zstd:
        _zstd["d"] = zstandard.ZstdDecompressor()
    return _zstd["d"]


@dataclass(frozen=True)
class WindowCodec:
    """One window's arrays <-> one compressed frame, for windows of these shapes and dtypes."""

    shapes: tuple[tuple[str, tuple[int, ...], str], ...]
    """(name, shape, dtype) of each array of a window, in `Window.ARRAYS` order."""

    @classmethod
    def of(cls, arrays: dict[str, np.ndarray]) -> WindowCodec:
        return cls(tuple((name, tuple(arrays[name].shape), arrays[name].dtype.str) for name in Window.ARRAYS))

    @property
    def raw_bytes(self) -> int:
        """A window's bytes held raw."""
        return sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for _, shape, dtype in self.shapes)

    def encode(self, arrays: dict[str, np.ndarray]) -> bytes:
        parts = []
        for name, shape, dtype in self.shapes:
            array = arrays[name]
            if array.shape != shape or array.dtype.str != dtype:
                raise ValueError(f"{name}: {array.dtype.str} {array.shape}, the codec holds {dtype} {shape}")
            if array.dtype == np.uint8 and array.ndim > 1:
                array = array.copy()
                array[1:] -= arrays[name][:-1]  # each decision as its difference from the one before
            parts.append(np.ascontiguousarray(array).tobytes())
        return _compressor().compress(b"".join(parts))

    def decode_into(self, frame: bytes, out: dict[str, np.ndarray], row: int) -> None:
        """Write the window of `frame` into row `row` of the batch arrays `out`."""
        flat = np.frombuffer(_decompressor().decompress(frame), np.uint8)
        offset = 0
        for name, shape, dtype in self.shapes:
            size = int(np.prod(shape)) * np.dtype(dtype).itemsize
            part = flat[offset : offset + size].view(dtype).reshape(shape)
            offset += size
            target = out[name][row]
            if part.dtype == np.uint8 and part.ndim > 1:
                target[0] = part[0]
                for d in range(1, shape[0]):  # uint8 sums wrap: the differences undone exactly
                    np.add(target[d - 1], part[d], out=target[d])
            else:
                target[...] = part

    def empty(self, rows: int) -> dict[str, np.ndarray]:
        return {name: np.empty((rows, *shape), dtype) for name, shape, dtype in self.shapes}


class HeldWindows:
    """Windows held in memory, raw or compressed; `add` puts a window in as pending, `commit` keeps the
    pending ones and `rollback` lets them go."""

    def __init__(self, compressed: bool = False) -> None:
        self.compressed = compressed
        self.codec: WindowCodec | None = None
        self._raw: dict[Key, dict[str, np.ndarray]] = {}
        self._frames: dict[Key, bytes] = {}
        self._sizes: dict[Key, int] = {}  # each window's bytes held
        self._pending: list[Key] = []

    def __len__(self) -> int:
        return len(self._sizes)

    def __bool__(self) -> bool:
        return len(self) > 0

    @property
    def nbytes(self) -> int:
        """Bytes held, the pending windows' included: arrays' bytes raw, frames' bytes compressed."""
        return sum(self._sizes.values())

    @property
    def pending_nbytes(self) -> int:
        return sum(self._sizes[key] for key in self._pending)

    @property
    def raw_nbytes(self) -> int:
        """What the same windows take held raw."""
        if self.compressed:
            return len(self) * (self.codec.raw_bytes if self.codec else 0)
        return self.nbytes

    def add(self, key: Key, arrays: dict[str, np.ndarray]) -> int:
        """Hold a window (copied or compressed) as pending; returns the bytes it takes."""
        self._pending.append(key)
        if self.compressed:
            if self.codec is None:
                self.codec = WindowCodec.of(arrays)
            self._frames[key] = self.codec.encode(arrays)
            self._sizes[key] = len(self._frames[key])
        else:
            self._raw[key] = {name: np.array(array) for name, array in arrays.items()}
            self._sizes[key] = sum(a.nbytes for a in self._raw[key].values())
        return self._sizes[key]

    def commit(self) -> None:
        self._pending = []

    def rollback(self) -> None:
        for key in self._pending:
            self._raw.pop(key, None)
            self._frames.pop(key, None)
            del self._sizes[key]
        self._pending = []

    def compress(self) -> None:
        """Hold every window compressed from now on (those held raw, pending or not, are compressed)."""
        if self.compressed:
            return
        raw, pending = self._raw, self._pending
        self.compressed, self._raw, self._sizes, self._pending = True, {}, {}, []
        waiting = set(pending)
        for key in [k for k in raw if k not in waiting]:
            self.add(key, raw.pop(key))
        self.commit()  # the windows held before stay held, the pending ones pending
        for key in pending:
            self.add(key, raw.pop(key))

    def stack(self, keys: list[Key]) -> dict[str, np.ndarray]:
        """The batch of these windows: the arrays `np.stack` of their raw arrays gives."""
        if not self.compressed:
            return {name: np.stack([self._raw[key][name] for key in keys]) for name in Window.ARRAYS}
        assert self.codec is not None
        out = self.codec.empty(len(keys))
        for row, key in enumerate(keys):
            self.codec.decode_into(self._frames[key], out, row)
        return out
