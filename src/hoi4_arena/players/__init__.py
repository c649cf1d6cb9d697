"""Players that are not learned: screen calibration (templates), the scripted player and its intents, the
hand that turns intents into raw input, and the AI game's spectator. Recording their games as sessions is
`play/record_ai.py` (`hoi4-arena record-ai`). See docs/players.md.

Try: hoi4-arena record-ai runs/scripted --player scripted --arena all --games 7 --minutes 60
"""
