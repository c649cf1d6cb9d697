"""What the game said to a checkpoint's clicks: the simulator's messages, and where its offensive drags ended.

Plays GAMES games of the headless simulator as play-policy does with the quickstart's play settings
(seeds 1000.., each from both sides, not recorded) and wraps the interface's message and offensive-drag
methods to count what a person would read after each click. Prints the messages by count (numbers
folded to N) and each side's offensive drags by where they ended: toward the enemy's half of the map
or its own, taken or refused. docs/learning.md, "Why it lost", quotes its output.

Usage: .venv/bin/python scripts/interface_messages.py CHECKPOINT [GAMES=6] [MAX_DAYS=60]
"""

import collections
import re
import signal
import sys
import tempfile
from pathlib import Path

from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.sim.interface import Interface

messages: collections.Counter = collections.Counter()
drags: collections.Counter = collections.Counter()
last: list[str] = []
said = Interface._say
drew = Interface._draw_offensive


def say(self: Interface, text: str) -> None:
    messages[re.sub(r"\d+", "N", text)] += 1
    last.append(text)
    said(self, text)


def draw_offensive(self: Interface, start: int, target: int, dragged: bool) -> None:
    last.clear()
    drew(self, start, target, dragged)
    if not dragged or not last:
        return
    half = self.size[1] / 2  # BLU holds the west, RED the east
    toward = self.pointer[0] > half if self.player == "BLU" else self.pointer[0] < half
    taken = last[-1].startswith("Offensive planned")
    drags[(self.player, "enemy half" if toward else "own half", "taken" if taken else "refused")] += 1


def main() -> None:
    if not 2 <= len(sys.argv) <= 4:
        sys.exit(__doc__)
    games = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    days = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    Interface._say = say
    Interface._draw_offensive = draw_offensive
    with tempfile.TemporaryDirectory() as out:
        config = PlayConfig(
            checkpoint=sys.argv[1],
            out=Path(out),
            games=games,
            seed=1000,
            point=True,
            reset_memory=8,
            follow_through=True,
            max_days=days,
            record=False,
            threads=2,
            progress=False,
        )
        summary = run_play_policy(config)
    for text, count in messages.most_common():
        print(f"{count:5d}  {text}")
    print()
    for key, count in sorted(drags.items()):
        print(f"{count:5d}  {' / '.join(key)}")
    print(
        f"\nwon {summary['wins']}, drawn {summary['draws']}, lost {summary['losses']}; setup {summary['setup']}"
    )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
