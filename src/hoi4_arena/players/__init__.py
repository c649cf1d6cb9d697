"""Players that are not learned: screen calibration (templates), the scripted player, the AI game's
spectator, and record-ai, which records their games as sessions. See docs/players.md.

Try: hoi4-arena record-ai runs/scripted --player scripted --arena all --games 7 --minutes 60
"""
