"""Score trained value models on games they never saw: who wins, by game day (docs/training.md).

Every game under DATA is held out (whatever its split): a train-critic checkpoint (`--critic`) and a
train-state-value checkpoint (`--state-value`) each predict the winner at every decision, and the report
gives accuracy and Brier score at days 10, 30, 60 and 100 and over every decision, beside the Brier
score of the base rate (the share of wins in the models' own training games, read from the state-value
checkpoint's report, else --base). One JSON object on stdout; the tables on stderr.

Try: .venv/bin/python scripts/value_held_out.py runs/critic-held --critic runs/critic-b/critic.pt \
       --state-value runs/state-value/state-value.pt
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

import torch

from hoi4_arena.data.loader import WindowLoader
from hoi4_arena.errors import UserError
from hoi4_arena.training.critic import data_settings, held_out_report, load_critic
from hoi4_arena.training.state_value import game_report, load_state_value
from hoi4_arena.training.value_data import ValueData, value_games
from hoi4_arena.training.value_report import by_day_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a folder of recorded sessions with ARENA logs (e.g. from record-ai)")
    parser.add_argument("--critic", help="a train-critic checkpoint (critic.pt)")
    parser.add_argument("--state-value", help="a train-state-value checkpoint (state-value.pt)")
    parser.add_argument("--base", type=float, help="the base rate when no --state-value gives one")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    try:
        if not (args.critic or args.state_value):
            raise UserError("give --critic, --state-value or both")
        torch.set_num_threads(args.threads)
        out: dict = {"data": args.data}
        state_value = load_state_value(args.state_value) if args.state_value else None
        base = args.base
        if base is None and state_value is not None:
            base = state_value.report.get("base_rate")
        if base is None:
            raise UserError("no base rate: give --state-value (its report has one) or --base")
        out["base_rate"] = base
        if state_value is not None:
            data = value_games(args.data, need_val=False, val_share=0)
            games = data.train + data.val
            out["games"] = len(games)
            out["state_value"] = game_report(lambda g: state_value.net.predict(g.features), games, base)
            print("state value\n" + by_day_table(out["state_value"]), file=sys.stderr)
        if args.critic:
            device = torch.device("cpu")
            checkpoint = load_critic(args.critic, device)
            policy = checkpoint.policy.to(device)
            window = int(checkpoint.extra["critic"]["config"].get("window", 16))
            data = value_games(args.data, layout=policy.config.layout, need_val=False, val_share=0)
            held = ValueData(data.data_dir, [], data.train + data.val, "all", data.skipped)  # all held out
            out["games"] = len(held.val)
            settings = data_settings(policy, window=window, lead_in=0, batch=8, hold_gb=0, seed=0)
            with WindowLoader(settings, 0) as loader:
                out["critic"] = held_out_report(policy, loader, held, base, device)
            print("critic\n" + by_day_table(out["critic"]), file=sys.stderr)
    except UserError as error:
        sys.exit(f"error: {error}")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
