"""Progress to a file or a pipe (`terminal.progress_bar`): plain lines while the bars run, not only at
the end, and plain lines at the end, not rich's drawing cut at 80 columns."""

from __future__ import annotations

import subprocess
import sys
import time

from hoi4_arena.terminal import progress_bar

# A run whose stderr is a pipe: one bar advanced to 3 of 10, then held open for a few line intervals.
RUN = """\
import time
from hoi4_arena.terminal import progress_bar
with progress_bar(line_every_s=0.2) as bar:
    task = bar.add_task("[bold]epoch 1/4", total=10)
    bar.advance(task, 3)
    time.sleep(1.0)
    bar.advance(task, 7)
"""

# A finished bar whose description and counts would not fit 80 columns beside rich's bar and times.
LONG = """from hoi4_arena.terminal import progress_bar
with progress_bar(line_every_s=0) as bar:
    games = bar.add_task("river: win 5 draw 13 loss 62 invalid 0 against the game's AI", total=80)
    bar.advance(games, 80)
    bar.add_task("decisions", total=None, completed=123456)
"""


def test_a_bar_writes_plain_lines_to_a_pipe_while_it_runs() -> None:
    process = subprocess.Popen([sys.executable, "-c", RUN], stderr=subprocess.PIPE, text=True)
    first = process.stderr.readline()  # before the bar ends: rich alone writes nothing until then
    assert first.startswith("epoch 1/4: 3/10, 0:00:0") and first.rstrip().endswith("elapsed")
    assert "[bold]" not in first
    rest = process.stderr.read()
    assert process.wait() == 0
    last = rest.splitlines()[-1]  # the bar's end: a plain line, not rich's drawing
    assert last.startswith("epoch 1/4: 10/10, 0:00:0") and last.endswith("elapsed")
    assert "━" not in rest and rest.count("10/10") == 1  # no plain line while finished, no drawing


def test_finished_bars_end_as_whole_plain_lines_not_a_drawing_cut_at_80_columns() -> None:
    done = subprocess.run([sys.executable, "-c", LONG], capture_output=True, text=True, check=True)
    lines = done.stderr.splitlines()
    assert lines[0].startswith("river: win 5 draw 13 loss 62 invalid 0 against the game's AI: 80/80, ")
    assert lines[1].startswith("decisions: 123456, ")
    assert len(lines) == 2 and "…" not in done.stderr


def test_finished_and_hidden_bars_have_no_line_and_zero_turns_the_lines_off() -> None:
    bar = progress_bar(line_every_s=0)
    done = bar.add_task("done", total=2, completed=2)
    bar.add_task("hidden", total=2, visible=False)
    bar.add_task("open-ended", total=None)
    assert bar.tasks[0].id == done
    lines = bar.plain_lines()
    assert len(lines) == 1 and lines[0].startswith("open-ended: 0, ")
    bar.start()
    time.sleep(0.05)
    bar.stop()  # no thread was started: nothing to join
    bar.stop()  # a second stop writes nothing more
