"""Benchmark: a command line's start when it builds only the command it runs (`cli.main`) vs every command.

Every `hoi4-arena` process (a user's command, each worker and window a run starts) builds its commands'
options before it runs one; the options of the commands made from configs are read from the configs'
sources (`cli_options.ConfigCommand`). The baseline is what it did before: typer building the whole app.
In one process this starts `hoi4-arena COMMAND --help` both ways, alternately, checks they print the same
help, and prints the median CPU time of each start (the child's user + system time) and the ratio.

Try: python bench/cli_start.py --rounds 10 --command train-bc
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

# The same entry point both ways, the baseline handing typer the whole app.
OURS = "import sys; from hoi4_arena import cli; sys.argv[0] = 'hoi4-arena'; cli.main()"
WHOLE = "import sys; from hoi4_arena import cli; sys.argv[0] = 'hoi4-arena'; cli.app(args=sys.argv[1:])"


def start(code: str, command: str) -> tuple[float, str]:
    """(CPU seconds, stdout) of one process running `code` with `command --help`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-c", code, command, "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="timed starts each way")
    parser.add_argument("--command", default="train-bc", help="the command whose help is printed")
    args = parser.parse_args()
    ours, theirs = [], []
    for _ in range(args.rounds):
        cpu, text = start(OURS, args.command)
        ours.append(cpu)
        cpu, whole = start(WHOLE, args.command)
        theirs.append(cpu)
        assert text == whole, "the two starts print different help"
    ours_s, base_s = statistics.median(ours), statistics.median(theirs)
    print(
        json.dumps(
            {
                "command": args.command,
                "rounds": args.rounds,
                "one_command_s": round(ours_s, 3),
                "every_command_s": round(base_s, 3),
                "speedup": round(base_s / ours_s, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
