"""One session's decisions as training samples: the demonstrated tokens and the views of each anchor frame.

A session the project recorded itself holds the views of every frame, stored at capture time
(`sessions/stored_views.py`): when they are of the training layout, each decision's views are read from
there and no video is decoded. They are what the policy saw while playing (live frames, not a lossy
codec's decoding of them); with ffv1 they are the decoded frames' views byte for byte. Otherwise (no
views file, another layout, a damaged or short one: a warning names the session and why) the video is
decoded front to back by `SessionReader.decisions()` (PyAV) and each decision's anchor frame becomes
the policy's views with the numpy `compute_views`, the same bytes the torch twin computes
(`screen/views.py`), so views can be made in background processes on the CPU. A decision is left out of
the loss (never relabelled) when it is:

- a burst (more than eight inputs in 200 ms: its tokens are cut short),
- recorded without focus (its inputs went elsewhere),
- with look-before-click on: a decision that presses a mouse button after a move in the same decision
  (the policy may only press where its pointer already was when the decision began),
- in a demonstration that is not a policy's own session, a decision holding a policy's inputs: the
  policy's opening of a corrections game (`players/handover.py`), whose mistakes are not to be learned.

`--drop-keys` removes the tokens of the given keys (their slots become no-ops; the other tokens keep
their slots, so their timing is unchanged). Setup-only keys such as space (0x20) never become tokens
in the first place (`screen/tokens.py`), so dropping them changes nothing.

`--timing in_order` moves each decision's tokens to its first slots, their order kept (after the keys are
dropped; the fed tokens too): the slot an event fell in is the hand's 25-ms jitter, which no frame shows,
and spread over eight slots a decision's one choice, to act or not, is eight small ones.

Measured (`docs/training.md`): at 1920x1080 the reader's colour conversion of an anchor costs about as
much as decoding the decision's two frames; converting the YUV planes ourselves would have to reproduce
swscale's rounding exactly (a plain formula differs on 0.06% of values), so the reader's RGB is used.

Try: .venv/bin/python -m hoi4_arena.data.decode runs/s1
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import KEY_CODES, KEY_NAMES
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.tokens import BUTTON_KINDS, KEY_KINDS, MOVE, NONE, PRESSES, held_after, in_order
from hoi4_arena.screen.views import compute_views
from hoi4_arena.sessions import stored_views
from hoi4_arena.sessions.labels import read_labels
from hoi4_arena.sessions.reader import Decision, SessionReader

log = logging.getLogger(__name__)

TIMINGS = ("recorded", "in_order")
"""How a decision's tokens keep their slots (`DecodeSettings.timing`)."""
PRESS_KINDS = tuple(kind for (_, edge), kind in BUTTON_KINDS.items() if edge == "down")


@dataclass(frozen=True)
class DecodeSettings:
    """What a decoded decision is made of."""

    layout: str = "cpu"
    """The view layout's name (screen/layout.py)."""
    drop_keys: tuple[int, ...] = ()
    """Virtual-key codes whose tokens are removed."""
    look_before_click: bool = False
    """Leave out of the loss decisions that press a button after a move in the same decision."""
    stored_views: bool = True
    """Read the views stored at capture time where a session has them for this layout (no decoding)."""
    idm_sessions: tuple[str, ...] = ()
    """Ids of the sessions whose tokens are an IDM's labels (sessions/labels.py), not their inputs."""
    idm_min_logp: float | None = None
    """Leave out of the loss labelled decisions with a token less likely than this."""
    expert_sessions: tuple[str, ...] = ()
    """Ids of the sessions whose tokens are the scripted player's labels (labels-expert.json), not their
    inputs (`hoi4-arena dagger`)."""
    expert_played_only: bool = False
    """In those sessions only the decisions the expert played carry loss (their labels are what was
    played); the learner's decisions feed the memory and are not scored (`hoi4-arena dagger --labels
    played`)."""
    timing: str = "recorded"
    """recorded: each token in the 25-ms slot its event fell in; in_order: each decision's tokens moved to
    its first slots, their order kept (`screen.tokens.in_order`), targets and fed tokens alike."""

    def __post_init__(self) -> None:
        unknown = [hex(k) for k in self.drop_keys if k not in KEY_NAMES]
        if unknown:
            raise UserError(f"unknown key codes to drop: {', '.join(unknown)}")
        if self.timing not in TIMINGS:
            raise UserError(f"timing must be one of {', '.join(TIMINGS)}, not {self.timing!r}")

    @property
    def view_layout(self) -> ViewLayout:
        return ViewLayout.named(self.layout)


@dataclass
class DecisionSample:
    """One decision as training reads it."""

    index: int
    views: dict[str, np.ndarray] | None
    """'global', 'quadrants', 'fovea' of the anchor frame; None when no wanted window reads them."""
    tokens: np.ndarray
    """(8, 3) int64 demonstrated tokens, dropped keys removed."""
    pointer: tuple[int, int]
    """Pointer lattice (x, y) when the decision began."""
    speed: int
    burst: bool
    pressed_after_move: bool
    focus: bool
    trainable: bool
    """Whether the decision may carry loss (see the module docstring)."""
    policy_inputs: bool = False
    """The decision holds a policy's inputs in a session that is not the policy's (a corrections game)."""
    executed: np.ndarray | None = None
    """(8, 3) int64: the tokens the session itself sent, where `tokens` are an expert's labels (a DAgger
    game: the learner's or the expert's inputs, whichever played); None where they are `tokens`."""
    held: np.ndarray | None = None
    """bool (len(PRESSES),): the buttons and keys held down when the decision began, followed from the
    session's first decision through what each decision sent (`fed`); None outside `decode_session`."""

    @property
    def fed(self) -> np.ndarray:
        """The tokens the policy's memory is fed as this decision's action when the next decision is
        scored: what was sent, which the screens after it show, not the label (a label the learner did
        not play never reached the screen)."""
        return self.tokens if self.executed is None else self.executed


def parse_keys(values: Sequence[str]) -> tuple[int, ...]:
    """Key codes from '0x20', '32' or a key name ('space', 'a'); UserError for anything else."""
    codes = []
    for value in values:
        text = str(value).strip().lower()
        try:
            code = int(text, 16) if text.startswith("0x") else int(text)
        except ValueError:
            if text not in KEY_CODES:
                raise UserError(
                    f"unknown key {value!r}: give a virtual-key code (0x20, 32) or a key name "
                    f"({', '.join(sorted(KEY_CODES)[:8])}, ...)"
                ) from None
            code = KEY_CODES[text]
        if code not in KEY_NAMES:
            raise UserError(f"unknown virtual-key code {value!r}")
        codes.append(code)
    return tuple(sorted(set(codes)))


def drop_key_tokens(tokens: np.ndarray, keys: Sequence[int]) -> np.ndarray:
    """`tokens` (8, 3) with the down and up tokens of `keys` replaced by no-ops."""
    kinds = [KEY_KINDS[key, edge] for key in keys for edge in ("down", "up") if (key, edge) in KEY_KINDS]
    if not kinds:
        return tokens
    out = tokens.copy()
    out[np.isin(out[:, 0], kinds)] = (NONE, 0, 0)
    return out


def pressed_after_move(tokens: np.ndarray) -> bool:
    """Whether a button press follows a move in the same decision (it acts where the pointer went)."""
    moved = False
    for kind in tokens[:, 0].tolist():
        moved = moved or kind == MOVE
        if moved and kind in PRESS_KINDS:
            return True
    return False


def decode_session(
    folder: str | Path, settings: DecodeSettings, need: np.ndarray | None = None
) -> Iterator[DecisionSample]:
    """The session's decisions in order; views only where `need[index]` (all when None).

    The views come from the session's stored views when it has them for the layout (and
    `settings.stored_views`), else from its decoded video; a stored views file that turns out damaged
    on the way is left for the video from that decision on, with a warning.

    Raises `UserError` when the session cannot be read (the reader names the file and the problem).
    """
    reader = SessionReader(folder)
    layout = settings.view_layout
    labelled = None
    executed = False  # expert labels: the inputs sent are fed as the previous action (DecisionSample.fed)
    if reader.manifest.id in settings.expert_sessions:
        executed = True
        labels = read_labels(reader.path, "expert")
        keep = labels.keep()
        if settings.expert_played_only and labels.played is not None:
            keep = keep & labels.played
        labelled = (labels.tokens, keep)
    elif reader.manifest.id in settings.idm_sessions:
        labels = read_labels(reader.path)
        labelled = (labels.tokens, labels.keep(settings.idm_min_logp))
    try:
        layout.check_screen(reader.size)
    except ValueError as error:
        raise UserError(f"{reader.path}: {error}") from None
    stored = None
    if settings.stored_views:
        manifest = reader.manifest
        expected = manifest.extra.get(stored_views.MANIFEST_KEY)
        stored, why = stored_views.for_layout(
            reader.path, layout, len(reader.frame_records), manifest.screen, expected
        )
        if why is not None:
            _warn_once(reader.path, f"{why}; decoding its video instead")
    done = 0  # decisions given so far
    held = np.zeros(len(PRESSES), bool)  # what the session holds down when the next decision begins
    if stored is not None:
        with stored:
            try:
                for decision in reader.decisions(images=False, arena=False):
                    wanted = need is None or (decision.index < len(need) and need[decision.index])
                    views = stored.views_at(decision.frame_index) if wanted else None
                    sample = _sample(reader, decision, views, settings, need, labelled, executed, held)
                    held = held_after(held, sample.fed)
                    yield sample
                    done = decision.index + 1
                return
            except stored_views.StoredViewsError as error:
                _warn_once(reader.path, f"{error}; decoding its video from decision {done} on")
    for decision in reader.decisions(arena=False):  # training never reads the ARENA state
        if decision.index < done:
            continue
        views = None
        if need is None or (decision.index < len(need) and need[decision.index]):
            views = compute_views(decision.image, decision.pointer_px, layout)
        sample = _sample(reader, decision, views, settings, need, labelled, executed, held)
        held = held_after(held, sample.fed)
        yield sample


_warned: set[tuple[str, str]] = set()


def _warn_once(path: Path, message: str) -> None:
    """One warning per session and reason in this process (a stream reads a session every epoch)."""
    if (str(path), message) not in _warned:
        _warned.add((str(path), message))
        log.warning("session %s: %s", path, message)


def _sample(
    reader: SessionReader,
    decision: Decision,
    views: dict[str, np.ndarray] | None,
    settings: DecodeSettings,
    need: np.ndarray | None,
    labelled: tuple[np.ndarray, np.ndarray] | None = None,
    executed: bool = False,
    held: np.ndarray | None = None,
) -> DecisionSample:
    index = decision.index
    if need is not None and index >= len(need):
        raise UserError(f"{reader.path}: holds more decisions than its frame log promised ({len(need)})")
    if labelled is not None and index >= len(labelled[0]):
        raise UserError(
            f"{reader.path}: holds more decisions than its labels ({len(labelled[0])}); label it again"
        )
    policy_inputs = reader.manifest.source != "policy" and any(
        event.source == "policy" for event in decision.events
    )
    tokens = drop_key_tokens(decision.tokens if labelled is None else labelled[0][index], settings.drop_keys)
    sent = drop_key_tokens(decision.tokens, settings.drop_keys) if executed else None
    if settings.timing == "in_order":
        tokens = in_order(tokens)
        sent = None if sent is None else in_order(sent)
    after_move = pressed_after_move(tokens)
    return DecisionSample(
        index=index,
        views=views,
        tokens=tokens,
        pointer=decision.pointer,
        speed=decision.game_speed,
        burst=decision.burst,
        pressed_after_move=after_move,
        focus=decision.focus,
        policy_inputs=policy_inputs,
        executed=sent,
        held=held,
        trainable=not decision.burst
        and decision.focus
        and not policy_inputs
        and not (settings.look_before_click and after_move)
        and (labelled is None or bool(labelled[1][index])),
    )


if __name__ == "__main__":
    try:
        for sample in decode_session(sys.argv[1], DecodeSettings()):
            shapes = {k: v.shape for k, v in (sample.views or {}).items()}
            print(sample.index, sample.tokens[:, 0].tolist(), sample.trainable, shapes)
            if sample.index >= 9:
                break
    except UserError as error:
        sys.exit(f"error: {error}")
