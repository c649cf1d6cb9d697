"""The one exception a command raises for bad input: the CLI prints its message, never a traceback.

Raise `UserError("what is wrong; what to do")` anywhere below a command. `hoi4_arena.cli.main` catches
it, prints the message to stderr and exits with status 2 (1 is kept for a failed run that did its work
and wrote its evidence). A path of the wrong kind or one the user may not write (FileExistsError,
IsADirectoryError, NotADirectoryError, PermissionError) that no check met first gets the same treatment
there, with the system's own words.
"""

from __future__ import annotations

import os
from pathlib import Path


class UserError(Exception):
    """Bad input or a refused request, explained in words a user can act on."""

    exit_code = 2


def existing_file(path: str | os.PathLike, what: str) -> Path:
    """`path` when it is a file; otherwise `UserError("{what} {path} does not exist")`. Torch-free, so that
    a command checks the files it was given before it imports what reads them."""
    found = Path(path)
    if not found.is_file():
        raise UserError(f"{what} {found} does not exist")
    return found
