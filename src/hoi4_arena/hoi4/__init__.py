"""HOI4 itself: an arena map as a HOI4 mod, its audit, the ARENA state channel, and running HOI4 on Linux.

`export.py` writes the mod from the same `ArenaMap` the simulator plays, `provinces.py` cuts its water
into sea and lake provinces, `rivers.py` draws rivers.bmp, `channel.py` holds the scripts that print
ARENA lines into game.log, `audit.py` reads a mod back and finds what makes HOI4 crash at load,
`script.py` is the small script reader the audit uses, `preview.py` draws a mod's map from its files,
and `control.py` finds, launches, quits and reports on the game. None of it has been seen running in
HOI4 (docs/hoi4.md).

Try: hoi4-arena generate-map river:3 /tmp/arena-river --mod && hoi4-arena audit-map /tmp/arena-river
"""
