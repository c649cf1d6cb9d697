"""The one exception a command raises for bad input: the CLI prints its message, never a traceback.

Raise `UserError("what is wrong; what to do")` anywhere below a command. `hoi4_arena.cli.main` catches
it, prints the message to stderr and exits with status 2 (1 is kept for a failed run that did its work
and wrote its evidence).
"""


class UserError(Exception):
    """Bad input or a refused request, explained in words a user can act on."""

    exit_code = 2
