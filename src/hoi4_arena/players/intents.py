"""The scripted player's intents: a fixed, versioned vocabulary, and the relabeller that marks each decision
of a scripted session with the intent it served.

The scripted player (`players/scripted.py`) stores with every input event the skill it served
(`InputEvent.skill`): close_popup, form_army, select_army, front, offensive, execute (and `pause` for the
harness's space presses). An intent is one step of its game, the unit a policy can be asked to carry out
(train-bc --skills conditions the policy on it):

    none       no step in progress: before the first, waiting out the activation delay, holding
    popup      close the news or an event window (OK)
    form_army  form the divisions into an army
    front      draw the front (Z, a click on enemy land)
    offensive  draw the opening's offensive (X, a right-drag)
    execute    click the execute arrow
    replan     draw a later offensive, once the opening is over

`intent_labels(session)` gives one intent per 200 ms decision (`SessionReader.windows()`, the decisions
training reads), decided so:

1. a decision holding scripted inputs takes the intent of their skills (most events; a tie goes to the
   later). `select_army` serves the step that follows it (front, offensive or replan); `offensive` is
   `replan` once the opening is over: after the game's first execute order, or, when the strategy is
   `none` (the front is held first), after the front order (the manifest's `orders` and player strategy);
2. a decision without input takes the intent in progress: inside a step (the same intent on both sides,
   popups aside) that intent (the player is looking for the effect, thinking, or trying again); after a
   step's last input, that step's intent up to the decision its order was taken at (the effect seen, the
   manifest's orders: the decision that sees it is already the next step's, as the player's phase is);
   the `LEAD` decisions before a step's (or a popup's) first input that step (the player's pause between
   seeing what to do and moving, PlayerConfig.think_s, up to 0.4 s); every other one `none`. Measured
   on a 20-day game (tests/players/test_intents.py): 100% of the decisions with input and 98 of 99
   decisions get the intent the live player serves (`live_intent`, what record-ai --intent-policy
   gives the policy); the other is a decision at a step's edge.
3. a decision holding a policy's inputs (the opening of a corrections game, `players/handover.py`) is
   `none` (training leaves it out of the loss anyway); harness events (space) are no skill of the player.

A session with scripted inputs none of which names a skill (recorded before skills were stored) is a
`UserError`; a skill this vocabulary does not know labels its decision `none` and is counted
(`SessionIntents.unknown`), so the coverage report shows it.

Try: hoi4-arena intents runs/demo-b/demos --out /tmp/intents.json
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError

VERSION = "intents1"
"""Changes whenever INTENTS or the labelling rules change: a checkpoint records it."""
INTENTS = ("none", "popup", "form_army", "front", "offensive", "execute", "replan")
"""The vocabulary, in index order (an intent's index is its embedding's row)."""
NONE = 0
SKILL_INTENTS = {
    "close_popup": "popup",
    "form_army": "form_army",
    "front": "front",
    "offensive": "offensive",
    "execute": "execute",
}
"""The scripted player's skills and their intents; `select_army` serves the next step (see above)."""
SERVES_NEXT = ("select_army",)
HARNESS = ("harness",)
"""Event sources that are nobody's intent (the match harness's setup keys)."""
LEAD = 2
"""Decisions before a step's first input that already belong to it (the player thinking)."""
ORDER_OF = {"form_army": "form_army", "front": "front", "offensive": "offensive", "execute": "execute"}
ORDER_OF["replan"] = "offensive"
"""The manifest order that says an intent's step is done (its effect seen)."""


def vocabulary() -> dict[str, Any]:
    """What a checkpoint and a report record of the vocabulary."""
    return {"version": VERSION, "intents": list(INTENTS)}


@dataclass
class SessionIntents:
    """One session's labels and what went into them."""

    labels: np.ndarray
    """(decisions,) int64 indices into INTENTS."""
    with_input: np.ndarray
    """(decisions,) bool: the decision holds scripted inputs (its label is their skill's intent)."""
    skills: Counter = field(default_factory=Counter)
    """Scripted events per skill."""
    unknown: Counter = field(default_factory=Counter)
    """Scripted events whose skill the vocabulary does not know (their decisions are `none`)."""
    policy_decisions: int = 0
    """Decisions holding a policy's inputs (labelled `none`)."""


def intent_labels(session: str | Path | Any) -> np.ndarray:
    """One intent index per decision of `session` (a folder or a `SessionReader`); see the module docstring."""
    return relabel(session).labels


def relabel(session: str | Path | Any) -> SessionIntents:
    from hoi4_arena.sessions.reader import SessionReader

    reader = session if isinstance(session, SessionReader) else SessionReader(session)
    windows = reader.windows().windows
    manifest = reader.manifest
    orders = [o for o in (manifest.orders or []) if isinstance(o, dict) and "t_ns" in o]
    strategy = ((manifest.extra or {}).get("player") or {}).get("strategy") or {}
    n = len(windows)
    result = SessionIntents(np.zeros(n, np.int64), np.zeros(n, bool))

    # The opening is over after the first execute (or, holding first, after the front): later offensives
    # are replans, as the scripted player's `_opening` says.
    ends = [o["t_ns"] for o in orders if o.get("order") == "execute"]
    if strategy.get("kind") == "none":
        ends += [o["t_ns"] for o in orders if o.get("order") == "front"]
    opening_end = min(ends) if ends else None

    # Every scripted event's intent, in time order (select_army resolved to the step it serves).
    events = []  # (decision, intent or None for unknown)
    for window in windows:
        for event in window.events:
            if event.source in HARNESS:
                continue
            if event.source == "policy":
                events.append((window.index, "policy", event.t_ns))
                continue
            events.append((window.index, event.skill, event.t_ns))
    scripted = [e for e in events if e[1] != "policy"]
    result.skills.update(skill for _, skill, _ in scripted)
    if scripted and not any(skill for _, skill, _ in scripted):
        raise UserError(
            f"{reader.path}: its {len(scripted)} scripted inputs carry no skill (recorded before skills "
            "were stored?); record it again with record-ai to label its intents"
        )
    named: list[tuple[int, str | None]] = []
    for i, (decision, skill, t_ns) in enumerate(events):
        if skill == "policy":
            named.append((decision, "policy"))
        elif skill in SERVES_NEXT:
            following = next(
                (s for _, s, _ in events[i + 1 :] if s in SKILL_INTENTS and s != "close_popup"), None
            )
            named.append((decision, _intent_of(following, t_ns, opening_end) if following else "none"))
        elif skill in SKILL_INTENTS:
            named.append((decision, _intent_of(skill, t_ns, opening_end)))
        else:
            result.unknown[skill or "(empty)"] += 1
            named.append((decision, None))

    # 1. decisions with input: their events' intent (most events; a tie to the later).
    per_decision: dict[int, list[str | None]] = {}
    for decision, intent in named:
        per_decision.setdefault(decision, []).append(intent)
    own: dict[int, str] = {}
    for decision, intents in per_decision.items():
        if "policy" in intents:
            result.policy_decisions += 1
            own[decision] = "none"
            continue
        known = [i for i in intents if i is not None]
        if not known:
            own[decision] = "none"
            continue
        counts = Counter(known)
        best = max(counts.values())
        own[decision] = next(i for i in reversed(known) if counts[i] == best)
        result.with_input[decision] = True

    # 2. decisions without input: the step in progress (popups are transparent to steps).
    labels = ["none"] * n
    for decision, intent in own.items():
        labels[decision] = intent
    steps = sorted((d, i) for d, i in own.items() if i not in ("popup", "none") and result.with_input[d])
    order_decisions = {kind: [] for kind in set(ORDER_OF.values())}
    for order in orders:
        kind = order.get("order")
        if kind in order_decisions:
            at = _decision_at(windows, order["t_ns"])
            if at is not None:
                order_decisions[kind].append(at)
    for k, (decision, intent) in enumerate(steps):
        nxt = steps[k + 1] if k + 1 < len(steps) else None
        stop = nxt[0] if nxt is not None else n
        done = [d for d in order_decisions.get(ORDER_OF.get(intent, ""), []) if decision <= d < stop]
        if nxt is not None and nxt[1] == intent and not done:  # the same step, still being tried
            _fill(labels, decision + 1, nxt[0], intent)
            continue
        if done:  # the decision that sees the effect already turns to the next step (the player's phase)
            _fill(labels, decision + 1, done[0], intent)
        if nxt is not None:
            _fill(labels, max(nxt[0] - LEAD, decision + 1), nxt[0], nxt[1])
    if steps:  # the first step's lead
        _fill(labels, max(steps[0][0] - LEAD, 0), steps[0][0], steps[0][1])
    for decision, intent in own.items():  # a popup seen is closed first: its lead too
        if intent == "popup" and own.get(decision - 1) != "popup":
            _fill(labels, decision - LEAD, decision, "popup")
    result.labels = np.array([INTENTS.index(label) for label in labels], np.int64)
    return result


def _intent_of(skill: str, t_ns: int, opening_end: int | None) -> str:
    intent = SKILL_INTENTS[skill]
    if intent == "offensive" and opening_end is not None and t_ns > opening_end:
        return "replan"
    return intent


def _decision_at(windows: list, t_ns: int) -> int | None:
    """The decision whose window holds time `t_ns` (an order is taken at a decision's capture)."""
    for window in windows:
        if window.t0_ns <= t_ns < window.end_ns:
            return window.index
    return None


def _fill(labels: list[str], start: int, stop: int, intent: str) -> None:
    """Label the decisions start..stop-1 that are still `none` (inputs and popups keep theirs)."""
    for d in range(max(start, 0), min(stop, len(labels))):
        if labels[d] == "none":
            labels[d] = intent


# --- the command: hoi4-arena intents DATA ---


def coverage(config: Any) -> dict[str, Any]:
    """Relabel every scripted session under `config.data` and report how the intents cover them."""
    from hoi4_arena.sessions.splits import find_session_folders, iter_sessions

    folders = find_session_folders(config.data)  # UserError when the folder does not exist
    entries = list(iter_sessions(config.data))
    other: Counter = Counter(e.manifest.source for e in entries if e.manifest.source != "scripted")
    scripted = [e for e in entries if e.manifest.source == "scripted"]
    if not scripted:
        found = ", ".join(f"{n} {s}" for s, n in sorted(other.items()))
        if len(folders) > len(entries):
            found += (", " if found else "") + f"{len(folders) - len(entries)} incomplete or unreadable"
        raise UserError(
            f"no scripted session in {config.data} ({len(folders)} session folder(s)"
            + (f": {found}" if found else "")
            + "); record some with hoi4-arena record-ai OUT --player scripted"
        )
    per_intent = Counter({name: 0 for name in INTENTS})
    with_input = Counter({name: 0 for name in INTENTS})
    skills: Counter = Counter()
    unknown: Counter = Counter()
    sessions = []
    for entry in scripted:
        got = relabel(entry.path)
        counts = Counter(INTENTS[i] for i in got.labels.tolist())
        per_intent.update(counts)
        with_input.update(INTENTS[i] for i in got.labels[got.with_input].tolist())
        skills.update(got.skills)
        unknown.update(got.unknown)
        sessions.append(
            {
                "id": entry.id,
                "path": str(entry.path),
                "split": entry.split,
                "decisions": len(got.labels),
                "per_intent": {name: counts.get(name, 0) for name in INTENTS},
                "unknown_skills": dict(got.unknown),
                "policy_decisions": got.policy_decisions,
            }
        )
    total = sum(per_intent.values())
    report = {
        "data": str(config.data),
        "vocabulary": vocabulary(),
        "sessions": len(sessions),
        "decisions": total,
        "per_intent": dict(per_intent),
        "share": {k: (v / total if total else 0.0) for k, v in per_intent.items()},
        "with_input": dict(with_input),
        "sessions_with": {name: sum(1 for s in sessions if s["per_intent"][name]) for name in INTENTS},
        "skills": dict(skills),
        "unknown_skills": dict(unknown),
        "sessions_with_unknown_skills": [s["id"] for s in sessions if s["unknown_skills"]],
        "other_sources": dict(other),
        "incomplete_or_unreadable": len(folders) - len(entries),
        "per_session": sessions,
    }
    if config.out is not None:
        out = Path(config.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        report = {**report, "out": str(out)}
    return report


# --- live: the intent a scripted player is serving now (record-ai --intent-policy) ---

PHASE_INTENTS = {
    "news": "popup",
    "form": "form_army",
    "front": "front",
    "front_click": "front",
    "offensive": "offensive",
    "offensive_drag": "offensive",
    "execute": "execute",
}
"""The scripted player's phases and their intents; every other phase (look, pause, unpause, wait, hold,
over) is `none`."""


def live_intent(player: Any, events: list) -> str:
    """The intent scripted `player` serves in the decision it just decided, `events` its inputs: as the
    relabeller reads a recording, the skill of the inputs when there are any (most events; a tie to the
    later), else the step its phase is on. `offensive` is `replan` once the player's opening is over."""
    opening = getattr(player, "_opening", True)

    def named(intent: str) -> str:
        return "replan" if intent == "offensive" and not opening else intent

    phase_intent = named(PHASE_INTENTS.get(player.phase, "none"))
    intents = []
    for event in events:
        if event.source in HARNESS or not event.skill:
            continue
        if event.skill in SKILL_INTENTS:
            intents.append(named(SKILL_INTENTS[event.skill]))
        elif event.skill in SERVES_NEXT:
            intents.append(phase_intent)
    if not intents:
        return phase_intent
    counts = Counter(intents)
    best = max(counts.values())
    return next(i for i in reversed(intents) if counts[i] == best)
