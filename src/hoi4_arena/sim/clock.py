"""Game speed and the clock that turns elapsed (virtual or wall) time into whole game hours.

HOI4 has five speeds and a pause. Here speed N runs `HOURS_PER_SECOND[N - 1]` game hours per second:
1, 3, 6, 12, 24, so speed 1 is slow enough to follow a battle hour by hour and speed 5 is about a game
day per second, like HOI4 on a fast machine. The world steps whole hours; the remainder is kept in an
exact integer accumulator (hour-nanoseconds), so any split of the same elapsed time gives the same
hours: 1000 advances of 1 ms step exactly as many hours as one advance of 1 s.

Try: python -c "from hoi4_arena.sim.clock import GameClock; c = GameClock(speed=5, paused=False); print(c.advance(200))"
"""

from __future__ import annotations

from dataclasses import dataclass

HOURS_PER_SECOND = (1, 3, 6, 12, 24)
SPEEDS = range(1, len(HOURS_PER_SECOND) + 1)
_NS_PER_S = 1_000_000_000


def to_ns(ms: float) -> int:
    """Milliseconds (int or float, >= 0) as whole nanoseconds."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not ms >= 0 or ms == float("inf"):
        raise ValueError(f"elapsed time must be a finite number of milliseconds >= 0, not {ms!r}")
    return round(ms * 1_000_000)


@dataclass
class GameClock:
    """Speed, pause and the fractional game hour carried between advances."""

    speed: int = 3
    paused: bool = True
    ui_ns: int = 0
    """Elapsed time the interface has seen (runs while paused, too)."""
    _carry: int = 0  # hour-nanoseconds not yet worth a whole hour

    def __post_init__(self) -> None:
        if self.speed not in SPEEDS:
            raise ValueError(f"speed must be 1..{len(HOURS_PER_SECOND)}, not {self.speed!r}")

    @property
    def hours_per_second(self) -> int:
        return HOURS_PER_SECOND[self.speed - 1]

    def set_speed(self, speed: int) -> int:
        """Clamp to 1..5 and set; returns the new speed."""
        self.speed = max(SPEEDS.start, min(SPEEDS.stop - 1, int(speed)))
        return self.speed

    def advance(self, ms: float) -> int:
        """Let `ms` pass; returns the whole game hours the world must step (0 while paused)."""
        ns = to_ns(ms)
        self.ui_ns += ns
        if self.paused:
            return 0
        self._carry += ns * self.hours_per_second
        hours, self._carry = divmod(self._carry, _NS_PER_S)
        return hours
