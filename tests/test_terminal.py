"""Progress to a file or a pipe (`terminal.progress_bar`): plain lines while the bars run, not only at the end."""

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


def test_a_bar_writes_plain_lines_to_a_pipe_while_it_runs() -> None:
    process = subprocess.Popen([sys.executable, "-c", RUN], stderr=subprocess.PIPE, text=True)
    first = process.stderr.readline()  # before the bar ends: rich alone writes nothing until then
    assert first.startswith("epoch 1/4: 3/10, 0:00:0") and first.rstrip().endswith("elapsed")
    assert "[bold]" not in first
    rest = process.stderr.read()
    assert process.wait() == 0
    assert "10/10" in rest  # rich's own drawing of the finished bar
    assert "epoch 1/4: 10/10" not in rest  # no plain line for a finished bar


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
