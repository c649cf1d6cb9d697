"""Streaming training batches from session folders: the epoch plan (shuffle.py) carried out by background
worker processes, or on the calling thread.

Each stream (one per worker; one in-process stream with `workers=0`) follows its `WorkerPlan`: it opens
the sessions of its share as the plan needs them, reads each once front to back (decode.py: its stored
views, or its decoded video), cuts its windows as the session plays (windows.py), holds produced windows until the plan emits them, and puts
them together into batches of `batch` windows. The training thread takes batches from the streams in
turn (stream 0, 1, ..., skipping streams that are done). Everything is decided by the plan, so:

- the same seed gives the same batches in the same order with `workers=0`, and the same windows (as a
  set, with the same bytes) with any number of workers;
- a `DataPosition` (epoch, where each stream's next batch starts in its plan, whose turn it is) is all
  a resumed run needs: each stream skips what was used without computing its views, and the batches
  that follow are the ones an uninterrupted run would have seen.

With `hold_gb` > 0 the loader can hold the data in memory: `hold(sessions)` decodes every window of
those sessions once (the streams as above, in order) and keeps their arrays when they fit in that many
GiB, or, when only that fits, keeps each window compressed (held.py: about 40 times smaller); from then
on an epoch or an ordered pass over held sessions is put together from memory, without decoding, into
exactly the batches, in exactly the order, that streaming would give (compressed windows decompressed
batch by batch on the thread that takes them). Training on a data set for many epochs then pays for
the views once.

A session that fails while it plays (a corrupt video in the middle of a run) is skipped: the stream
reports it (`SessionSkipped`, logged as a warning and listed in `skipped`) and carries on without that
session's remaining windows. Workers are processes forked from a clean server that imported this module
once (`processes.worker_context`; no torch in them: numpy, PyAV and the numba resampler), started on
first use and stopped by `close()`; they ignore Ctrl+C so that the training thread decides how to stop.

Try: .venv/bin/python -m hoi4_arena.data.loader runs/ --workers 2
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import queue
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hoi4_arena.allocator import keep_freed_memory, large_blocks_mapped
from hoi4_arena.data.decode import DecodeSettings, decode_session
from hoi4_arena.data.held import HeldWindows
from hoi4_arena.data.shuffle import WindowRef, WorkerPlan, epoch_plan, ordered_plan
from hoi4_arena.data.sources import SessionSource
from hoi4_arena.data.windows import Window, cut_windows, idle_spans, needed_decisions, plan_spans
from hoi4_arena.errors import UserError
from hoi4_arena.processes import exit_with_parent, worker_context

log = logging.getLogger(__name__)

# Batches a worker may have ready before the training thread takes them.
PREFETCH = 2


@dataclass(frozen=True)
class DataSettings:
    """How sessions become batches (everything here changes which bytes a batch holds)."""

    decode: DecodeSettings = field(default_factory=DecodeSettings)
    window: int = 16
    """Decisions with loss per window."""
    lead_in: int = 0
    """Decisions fed before each window's first scored one, without loss, to warm the memory up."""
    batch: int = 8
    """Windows per batch."""
    clip: int = 1
    """Global views per decision: 1, or the layout's clip length for encoders that read the clip."""
    open_sessions: int = 4
    """Sessions each stream plays at once."""
    shuffle_windows: int = 64
    """Windows in each stream's shuffle buffer."""
    idle_windows: float = 1.0
    """Share of the windows without any input in their region that an epoch plays (a seeded draw per
    epoch); every window with input is played. 1 plays them all."""
    hold_gb: float = 0.0
    """`WindowLoader.hold` keeps every decoded window in memory when they fit in this many GiB (0: never)."""
    hold_compressed: bool | None = None
    """How `hold` keeps them: None raw when they fit, else compressed when that fits; True always
    compressed; False raw or not at all. The batches are the same bytes either way."""
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("window", "batch", "clip", "open_sessions", "shuffle_windows"):
            if getattr(self, name) < 1:
                raise UserError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.lead_in < 0:
            raise UserError(f"lead_in must be >= 0, got {self.lead_in}")
        if not 0 <= self.idle_windows <= 1:
            raise UserError(f"idle_windows must lie in 0..1, got {self.idle_windows}")
        if not self.hold_gb >= 0:
            raise UserError(f"hold_gb must be >= 0, got {self.hold_gb}")

    def spans(self, session: SessionSource) -> list:
        spans = plan_spans(session.decisions, self.window, self.lead_in)
        return [span for span in spans if span.first >= session.start] if session.start else spans


@dataclass
class Batch:
    """Windows stacked along a leading batch dim B (see `windows.Window` for each array)."""

    keys: list[tuple[str, int]]
    """(session id, span index) of each row."""
    arrays: dict[str, np.ndarray]
    next_index: int = 0
    """Where the stream's next batch starts in its plan's emission order."""

    @classmethod
    def of(cls, windows: list[Window], next_index: int = 0) -> Batch:
        arrays = {name: np.stack([getattr(w, name) for w in windows]) for name in Window.ARRAYS}
        return cls([w.key for w in windows], arrays, next_index)

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class SessionSkipped:
    """A stream gave up on a session that failed while it played."""

    path: str
    reason: str


@dataclass(frozen=True)
class DataPosition:
    """Where an epoch stands: enough to resume it exactly."""

    epoch: int
    starts: tuple[int, ...]
    """For each stream, where its next batch starts in its plan's emission order."""
    turn: int = 0
    """The stream asked for the next batch."""

    def to_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "starts": list(self.starts), "turn": self.turn}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataPosition:
        return cls(int(data["epoch"]), tuple(int(v) for v in data["starts"]), int(data["turn"]))


def run_plan(
    sessions: list[SessionSource], settings: DataSettings, plan: WorkerPlan, start: int = 0
) -> Iterator[Batch | SessionSkipped]:
    """Carry out one stream's plan from emission index `start`: batches, and notices of skipped sessions."""
    spans = {s: settings.spans(sessions[s]) for s in plan.sessions}
    wanted: dict[int, set[int]] = {s: set() for s in plan.sessions}
    for ref in plan.emission[start:]:
        wanted[ref.session].add(ref.span)
    last_made = {ref.session: i for i, ref in enumerate(plan.production)}
    streams: dict[int, Iterator[tuple[int, Window | None]]] = {}
    failed: set[int] = set()
    produced: dict[WindowRef, Window | None] = {}
    position = 0  # in plan.production
    batch: list[Window] = []

    def open_session(s: int) -> Iterator[tuple[int, Window | None]]:
        if not wanted[s]:  # everything it holds was used before `start`: no need to decode it
            return iter([(i, None) for i in range(len(spans[s]))])
        need = needed_decisions(spans[s], wanted[s], sessions[s].decisions, settings.clip)
        samples = decode_session(sessions[s].path, settings.decode, need)
        return cut_windows(samples, spans[s], sessions[s].id, wanted=wanted[s], clip=settings.clip)

    for index, ref in enumerate(plan.emission):
        while ref not in produced and ref.session not in failed:
            made = plan.production[position]
            position += 1
            s = made.session
            if s in failed:
                continue
            if s not in streams:
                streams[s] = open_session(s)
            try:
                span, window = next(streams[s])
                while span < made.span:  # a plan of some windows only (evaluation) passes the others by
                    span, window = next(streams[s])
                if span != made.span:
                    raise UserError(
                        f"{sessions[s].path}: cut span {span} where the plan expected {made.span}"
                    )
            except (UserError, StopIteration) as error:
                reason = str(error) or "the session ended before its planned windows"
                failed.add(s)
                streams.pop(s, None)
                yield SessionSkipped(sessions[s].path, reason)
                continue
            produced[made] = window
            if last_made[s] == position - 1:  # its last planned window: close the video
                streams.pop(s, None)
        window = produced.pop(ref, None)
        if index < start or window is None:
            continue
        batch.append(window)
        if len(batch) == settings.batch:
            yield Batch.of(batch, index + 1)
            batch = []
    if batch:
        yield Batch.of(batch, len(plan.emission))


def _worker_main(settings: DataSettings, tasks: Any, results: Any) -> None:
    """A worker process: carry out each task's plan, putting its items on `results`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the training thread decides how to stop
    exit_with_parent()  # a killed training run leaves no worker waiting on its queue
    keep_freed_memory()  # frames and windows are built and dropped all the time (allocator.py)
    for task in iter(tasks.get, None):
        task_id, sessions, plan, start = task
        try:
            for item in run_plan(sessions, settings, plan, start):
                results.put(("item", task_id, item))
            results.put(("end", task_id, None))
        except BaseException:  # noqa: BLE001 -- handed to the training thread with its traceback
            results.put(("error", task_id, traceback.format_exc()))


class WindowLoader:
    """Batches of windows from sessions, with `workers` background processes (0: on this thread)."""

    def __init__(self, settings: DataSettings, workers: int = 0) -> None:
        if workers < 0:
            raise UserError(f"workers must be >= 0, got {workers}")
        self.settings = settings
        self.workers = workers
        self.skipped: list[SessionSkipped] = []
        self._processes: list[Any] = []
        self._tasks: list[Any] = []
        self._results: list[Any] = []
        self._task_id = 0
        self._unfinished: set[int] = set()  # workers still busy with a task nobody reads any more
        self._held = HeldWindows(compressed=bool(settings.hold_compressed))
        self._held_sessions: set[str] = set()  # ids of sessions whose every window is held

    @property
    def held_bytes(self) -> int:
        """Bytes of the data held (compressed frames' bytes when held compressed)."""
        return self._held.nbytes

    @property
    def held_raw_bytes(self) -> int:
        """What the data held would take held raw."""
        return self._held.raw_nbytes

    @property
    def held_compressed(self) -> bool:
        return self._held.compressed

    # --- plans ---

    def plan(self, sessions: list[SessionSource], epoch: int) -> list[WorkerPlan]:
        spans = [self.settings.spans(s) for s in sessions]
        idle = None
        if self.settings.idle_windows < 1:
            idle = [idle_spans(plan, s.active) for plan, s in zip(spans, sessions, strict=True)]
        return epoch_plan(
            [len(plan) for plan in spans],
            self.workers,
            self.settings.seed,
            epoch,
            open_sessions=self.settings.open_sessions,
            buffer=self.settings.shuffle_windows,
            idle=idle,
            idle_keep=self.settings.idle_windows,
        )

    def batches_in_epoch(self, sessions: list[SessionSource], epoch: int) -> int:
        return sum(p.batches(self.settings.batch) for p in self.plan(sessions, epoch))

    # --- holding the data in memory ---

    def hold(self, sessions: list[SessionSource], on_batch: Any = None) -> bool:
        """Decode every window of `sessions` once and keep them in memory, if they fit in `hold_gb`.

        Returns whether they are all held. `on_batch(windows)` is called as batches arrive (progress).
        Sessions held before are not decoded again. The windows are held raw while the bytes held so far,
        extrapolated to all of them, fit; when they would not (and `hold_compressed` is not False) every
        window is held compressed from then on, and the extrapolation goes on with compressed sizes. Data
        that would not fit even so is let go at once (a warning says so) and those sessions stream as
        before.
        """
        limit = self.settings.hold_gb * 2**30
        todo = [s for s in sessions if s.id not in self._held_sessions]
        if not limit or not todo:
            return bool(limit) and self._all_held(sessions)
        refs = [WindowRef(i, span) for i, s in enumerate(todo) for span in range(len(self.settings.spans(s)))]
        before, size, added = self._held.nbytes, 0, []

        def estimate() -> float:  # the bytes held once every window is: those so far, extrapolated
            return before + size / len(added) * len(refs)

        plans = ordered_plan(refs, self.workers)
        # Each window's raw views are freed as its frame is kept: mapped, not heap, or the heap only grows.
        with large_blocks_mapped():
            for batch, _ in self._round_robin(todo, plans, DataPosition(-1, tuple(0 for _ in plans))):
                for row, key in enumerate(batch.keys):
                    size += self._held.add(key, {name: array[row] for name, array in batch.arrays.items()})
                    added.append(key)
                if estimate() > limit and self.settings.hold_compressed is None and not self._held.compressed:
                    log.info(
                        "the data (about %.1f GiB raw) do not fit in hold_gb %.1f: holding them compressed",
                        estimate() / 2**30,
                        self.settings.hold_gb,
                    )
                    self._held.compress()
                    before, size = self._held.nbytes - self._held.pending_nbytes, self._held.pending_nbytes
                if estimate() > limit:
                    log.warning(
                        "the data (about %.1f GiB%s) do not fit in hold_gb %.1f: every epoch reads them again",
                        estimate() / 2**30,
                        " compressed" if self._held.compressed else "",
                        self.settings.hold_gb,
                    )
                    self._held.rollback()
                    if self._unfinished:
                        self.close()  # the workers are still decoding the rest: stop them
                    return False
                if on_batch is not None:
                    on_batch(len(batch))
        self._held.commit()
        held = set(added)
        for s in todo:
            if all((s.id, span) in held for span in range(len(self.settings.spans(s)))):
                self._held_sessions.add(s.id)
        return self._all_held(sessions)

    def _all_held(self, sessions: list[SessionSource]) -> bool:
        return all(s.id in self._held_sessions for s in sessions)

    def _held_stream(
        self, sessions: list[SessionSource], plan: WorkerPlan, start: int
    ) -> Iterator[Batch | SessionSkipped]:
        """One stream's batches from memory: what `run_plan` gives for the plan, without decoding. Held
        compressed, each batch is decompressed here, on the thread that takes it: through a worker it
        would cost this thread more (the decompressed batch pickled through a pipe; bench/hold.py)."""
        size = self.settings.batch
        for first in range(start, len(plan.emission), size):
            rows = [(sessions[r.session].id, r.span) for r in plan.emission[first : first + size]]
            yield Batch(rows, self._held.stack(rows), min(first + size, len(plan.emission)))

    # --- iteration ---

    def epoch(
        self, sessions: list[SessionSource], epoch: int, position: DataPosition | None = None
    ) -> Iterator[tuple[Batch, DataPosition]]:
        """The epoch's batches, each with the position after it; from `position` when resuming."""
        plans = self.plan(sessions, epoch)
        if position is None:
            position = DataPosition(epoch, tuple(0 for _ in plans))
        if position.epoch != epoch or len(position.starts) != len(plans):
            raise UserError(
                f"the saved data position ({position.epoch}, {len(position.starts)} streams) does not fit "
                f"epoch {epoch} with {len(plans)} streams; resume with the same --workers"
            )
        yield from self._round_robin(sessions, plans, position)

    def ordered(self, sessions: list[SessionSource], refs: list[WindowRef]) -> Iterator[Batch]:
        """Batches of the given windows without shuffling (evaluation)."""
        plans = ordered_plan(refs, self.workers)
        for batch, _ in self._round_robin(sessions, plans, DataPosition(-1, tuple(0 for _ in plans))):
            yield batch

    def _round_robin(
        self, sessions: list[SessionSource], plans: list[WorkerPlan], position: DataPosition
    ) -> Iterator[tuple[Batch, DataPosition]]:
        streams = self._streams(sessions, plans, position.starts)
        starts = list(position.starts)
        active = [True] * len(plans)
        turn = position.turn

        def following(w: int) -> int:
            for step in range(1, len(plans) + 1):
                if active[(w + step) % len(plans)]:
                    return (w + step) % len(plans)
            return w

        while any(active):
            w = turn if active[turn] else following(turn)
            item = next(streams[w], None)
            while isinstance(item, SessionSkipped):
                log.warning("skipping session %s for the rest of this pass: %s", item.path, item.reason)
                self.skipped.append(item)
                item = next(streams[w], None)
            if item is None:
                active[w] = False
                turn = following(w)
                continue
            starts[w] = item.next_index
            turn = following(w)
            yield item, DataPosition(position.epoch, tuple(starts), turn)

    def _streams(
        self, sessions: list[SessionSource], plans: list[WorkerPlan], starts: tuple[int, ...]
    ) -> list[Iterator[Batch | SessionSkipped]]:
        if self._held and self._all_held(sessions):
            return [
                self._held_stream(sessions, plan, start) for plan, start in zip(plans, starts, strict=True)
            ]
        if self.workers == 0:
            return [run_plan(sessions, self.settings, plans[0], starts[0])]
        if self._unfinished:
            # An abandoned pass would keep its workers decoding until its end: start afresh instead.
            self.close()
        self._start()
        self._task_id += 1
        for w, plan in enumerate(plans):
            self._tasks[w].put((self._task_id, sessions, plan, starts[w]))
            self._unfinished.add(w)
        return [self._receive(w, self._task_id) for w in range(len(plans))]

    # --- worker processes ---

    def _start(self) -> None:
        if self._processes:
            return
        context = worker_context()
        for w in range(self.workers):
            tasks, results = context.Queue(), context.Queue(maxsize=PREFETCH)
            process = context.Process(
                target=_worker_main,
                args=(self.settings, tasks, results),
                name=f"data-worker-{w}",
                daemon=True,
            )
            process.start()
            self._processes.append(process)
            self._tasks.append(tasks)
            self._results.append(results)

    def _receive(self, w: int, task_id: int) -> Iterator[Batch | SessionSkipped]:
        while True:
            try:
                kind, got_id, payload = self._results[w].get(timeout=1.0)
            except queue.Empty:
                if not self._processes[w].is_alive():
                    raise RuntimeError(
                        f"data worker {w} stopped unexpectedly (exit code {self._processes[w].exitcode})"
                    ) from None
                continue
            if got_id != task_id:
                continue  # left over from a task that was abandoned
            if kind == "end":
                self._unfinished.discard(w)
                return
            if kind == "error":
                self._unfinished.discard(w)
                raise RuntimeError(f"data worker {w} failed:\n{payload}")
            yield payload

    def close(self) -> None:
        """Stop the worker processes (this loader's own, by their handles)."""
        for tasks in self._tasks:
            with contextlib.suppress(ValueError, OSError, queue.Full):
                tasks.put_nowait(None)
        deadline = time.monotonic() + 2.0
        for process in self._processes:
            # A worker blocked on a full results queue never reads its None: end it.
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.terminate()
                process.join(timeout=5.0)
        for q in (*self._tasks, *self._results):
            q.cancel_join_thread()
            q.close()
        self._processes, self._tasks, self._results = [], [], []
        self._unfinished.clear()

    def __enter__(self) -> WindowLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    from hoi4_arena.data.sources import find_sessions

    parser = argparse.ArgumentParser(description="Print the first batches a data folder gives.")
    parser.add_argument("data")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batches", type=int, default=3)
    args = parser.parse_args()
    try:
        found = find_sessions(args.data)
        with WindowLoader(DataSettings(), args.workers) as loader:
            for i, (batch, where) in enumerate(loader.epoch(found.train, 0)):
                shapes = {k: v.shape for k, v in batch.arrays.items()}
                print(i, batch.keys, where, shapes)
                if i + 1 >= args.batches:
                    break
    except UserError as error:
        sys.exit(f"error: {error}")
