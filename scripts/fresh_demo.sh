#!/usr/bin/env bash
# A fresh `make demo`, as a new user runs it: clone the repository's main branch into a new folder, run
# `make demo` there from nothing (a new .venv, every stage of the quickstart), and print what the README
# quotes: the date, the commit, the CPU (and whether it has AVX-512), the wall time, the weights' hash,
# the numerics the weights were trained with, and the report's tables.
#
#   scripts/fresh_demo.sh [FOLDER]     FOLDER: where to clone (default: a new folder under /tmp); kept
#
# REPO (default: the repository this script is in) and BRANCH (default: main) say what to clone; the
# commit cloned is the branch's last commit, not the working tree. pip's cache is used as pip always does
# (the same pinned wheels); nothing else of this checkout is. Status: make's. The whole log is in
# FOLDER/make-demo.log; `make demo` takes 45 minutes or more on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repo=${REPO:-$here}
branch=${BRANCH:-main}
folder=${1:-$(mktemp -d /tmp/fresh-demo.XXXXXX)}
if [ -e "$folder/hoi4-arena" ]; then
  echo "error: $folder/hoi4-arena exists: give a new folder" >&2
  exit 2
fi
mkdir -p "$folder"
folder=$(cd "$folder" && pwd)
clone=$folder/hoi4-arena
log=$folder/make-demo.log

cpu_model=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
if grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | grep -qw avx512f; then avx512=yes; else avx512=no; fi

git clone --quiet --branch "$branch" --single-branch "$repo" "$clone"
commit=$(git -C "$clone" rev-parse HEAD)
started_at=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
echo "fresh make demo: $repo ($branch) at $commit in $clone, started $started_at; log: $log" >&2

start=$(date +%s)
status=0
(cd "$clone" && make demo) >"$log" 2>&1 || status=$?
wall=$(($(date +%s) - start))

echo "date:      $started_at (finished $(date -u '+%H:%M:%S UTC'))"
echo "commit:    $commit ($branch of $repo)"
echo "cpu:       ${cpu_model:-unknown} (AVX-512: $avx512), $(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "wall:      $((wall / 60)) min $((wall % 60)) s"
echo "status:    $status"
report=$clone/demo/report.json
if [ "$status" -ne 0 ] || [ ! -f "$report" ]; then
  echo "make demo failed (status $status); the end of its log:" >&2
  tail -n 40 "$log" >&2
  exit $((status == 0 ? 1 : status))
fi
"$clone/.venv/bin/python" - "$report" <<'EOF'
import json
import sys

report = json.load(open(sys.argv[1]))
work = report["work"]
numerics = work.get("numerics") or {}
print(f"weights:   sha256 {work['weights_sha256']} ({work['train_steps']} steps)")
print(
    f"numerics:  pinned {numerics.get('pinned')}, ATen {numerics.get('aten_capability')}, "
    f"{numerics.get('settings')}"
)
print(f"report:    {report['report']}")


def table(title, players):
    print(f"\n{title}\n")
    print("| player | won / drawn / lost | win rate [95% Wilson] | setup complete (army, front, offensive, executed) |")
    print("|---|---|---|---|")
    for name, r in players.items():
        rate, setup = r["win_rate"], r["setup"]
        steps = ", ".join(str(setup[k]) for k in ("army", "front", "offensive", "executed"))
        print(
            f"| {name} | {r['wins']} / {r['draws']} / {r['losses']} | {rate['rate']:.0%} "
            f"[{rate['low']:.0%}, {rate['high']:.0%}] | {setup['complete']} of {r['games']} ({steps}) |"
        )


table(f"against the game's AI on {report['arena']}", report["players"])
held = report.get("held_out") or {}
if held:
    table(f"on the held-out map {held['arena']}", held["players"])
EOF
