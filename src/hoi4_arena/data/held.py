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

The compressed frames live in one anonymous shared-memory file (`os.memfd_create`), not in the Python
heap, so the loader's worker processes can read them (`PackedReader`, by the file's /proc path) and
decompress batches beside the training step; without workers the training thread decompresses them.

Try: .venv/bin/python bench/hold.py --games 8     # raw, compressed and streamed, in one process
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import zstandard

from hoi4_arena.data.windows import Window

Key = tuple[str, int]
"""A window: (session id, span index)."""

LEVEL = 1
"""zstd's level: on the quickstart's windows level 3 is 3% smaller and 30% slower to compress."""


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


def _anonymous_file() -> IO[bytes]:
    """A file in memory that other processes of this user can open by its /proc path (Linux), or a
    temporary file elsewhere."""
    if hasattr(os, "memfd_create"):
        return os.fdopen(os.memfd_create("hoi4-arena-held-windows", os.MFD_CLOEXEC), "w+b", buffering=0)
    return tempfile.TemporaryFile(buffering=0)


class HeldWindows:
    """Windows held in memory, raw or compressed; `add` puts a window in as pending, `commit` keeps the
    pending ones and `rollback` lets them go."""

    def __init__(self, compressed: bool = False) -> None:
        self.compressed = compressed
        self._raw: dict[Key, dict[str, np.ndarray]] = {}
        self.codec: WindowCodec | None = None
        self._file: IO[bytes] | None = None
        self._index: dict[Key, tuple[int, int]] = {}  # key -> (offset, length) in the file
        self._end = 0  # the file's used length
        self._pending: list[Key] = []
        self._committed_end = 0

    def __len__(self) -> int:
        return len(self._index) if self.compressed else len(self._raw)

    def __bool__(self) -> bool:
        return len(self) > 0

    @property
    def nbytes(self) -> int:
        """Bytes held, the pending windows' included: arrays' bytes raw, frames' bytes compressed."""
        if self.compressed:
            return self._end
        return sum(sum(a.nbytes for a in arrays.values()) for arrays in self._raw.values())

    @property
    def pending_nbytes(self) -> int:
        """Bytes of the pending windows."""
        if self.compressed:
            return self._end - self._committed_end
        return sum(sum(a.nbytes for a in self._raw[key].values()) for key in self._pending)

    @property
    def raw_nbytes(self) -> int:
        """What the same windows take held raw."""
        if self.compressed:
            return len(self._index) * (self.codec.raw_bytes if self.codec else 0)
        return self.nbytes

    def add(self, key: Key, arrays: dict[str, np.ndarray]) -> int:
        """Hold a window (copied or compressed) as pending; returns the bytes it takes."""
        self._pending.append(key)
        if not self.compressed:
            self._raw[key] = {name: np.array(array) for name, array in arrays.items()}
            return sum(a.nbytes for a in self._raw[key].values())
        if self.codec is None:
            self.codec = WindowCodec.of(arrays)
            self._file = _anonymous_file()
        frame = self.codec.encode(arrays)
        assert self._file is not None
        os.pwrite(self._file.fileno(), frame, self._end)
        self._index[key] = (self._end, len(frame))
        self._end += len(frame)
        return len(frame)

    def commit(self) -> None:
        self._pending = []
        self._committed_end = self._end

    def rollback(self) -> None:
        for key in self._pending:
            self._raw.pop(key, None)
            self._index.pop(key, None)
        self._pending = []
        if self.compressed and self._file is not None:
            os.ftruncate(self._file.fileno(), self._committed_end)  # hand the memory back
            self._end = self._committed_end

    def compress(self) -> None:
        """Hold every window compressed from now on (those held raw, pending or not, are compressed)."""
        if self.compressed:
            return
        raw, pending = self._raw, set(self._pending)
        self.compressed, self._raw, self._pending = True, {}, []
        for key in [k for k in raw if k not in pending]:
            self.add(key, raw.pop(key))
        self.commit()
        for key in list(raw):
            self.add(key, raw.pop(key))

    def stack(self, keys: list[Key]) -> dict[str, np.ndarray]:
        """The batch of these windows: the arrays `np.stack` of their raw arrays gives."""
        if not self.compressed:
            return {name: np.stack([self._raw[key][name] for key in keys]) for name in Window.ARRAYS}
        return self.reader(keys).stack(keys)

    def reader(self, keys: list[Key]) -> PackedReader:
        """What decompresses these windows; a worker process can unpickle it and read them by `path`."""
        assert self.compressed and self.codec is not None and self._file is not None
        return PackedReader(self.codec, {key: self._index[key] for key in keys}, self.path, self._file)

    @property
    def path(self) -> str | None:
        """The compressed file's path for another process (None where there is no /proc)."""
        if self._file is None:
            return None
        path = f"/proc/{os.getpid()}/fd/{self._file.fileno()}"
        return path if os.path.exists(path) else None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self.__init__(self.compressed)  # type: ignore[misc]


class PackedReader:
    """Decompresses batches of some held windows, in this process or (pickled) in a worker process."""

    def __init__(
        self, codec: WindowCodec, index: dict[Key, tuple[int, int]], path: str | None, file: IO[bytes] | None
    ) -> None:
        self.codec = codec
        self.index = index
        self.path = path
        self._file = file

    def __getstate__(self) -> dict[str, Any]:
        if self.path is None:
            raise RuntimeError("held windows without a /proc path cannot be read by another process")
        return {"codec": self.codec, "index": self.index, "path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["codec"], state["index"], state["path"], None)  # type: ignore[misc]

    def stack(self, keys: list[Key]) -> dict[str, np.ndarray]:
        if self._file is None:  # in a worker: open the loader's file once
            assert self.path is not None
            self._file = open(self.path, "rb", buffering=0)  # noqa: SIM115 -- kept open across batches
        out = self.codec.empty(len(keys))
        for row, key in enumerate(keys):
            offset, length = self.index[key]
            self.codec.decode_into(os.pread(self._file.fileno(), length, offset), out, row)
        return out


def held_batches(
    held: HeldWindows | PackedReader, keys: list[Key], batch: int, start: int
) -> Iterator[tuple[list[Key], dict[str, np.ndarray], int]]:
    """A stream's batches from held windows: (rows, arrays, where the next batch starts) for the batches of
    `keys` (the stream's emission order) from `start` on."""
    for first in range(start, len(keys), batch):
        rows = keys[first : first + batch]
        yield rows, held.stack(rows), min(first + batch, len(keys))
