#!/usr/bin/env bash
# Every probe of docs/prediction-criterion-v2.md on BeamRider, SpaceInvaders and Seaquest, stage by stage so that a
# criterion table over three games comes as early as possible:
#   1. each trunk far enough for the stages (its snapshot at or past 150k agent steps);
#   2. the probes at 50k on every game, then the retest of BeamRider at 100k (seeds 3-5, its own anchor), then 100k
#      and 150k on every game; the criterion table after each stage;
#   3. the trunks to their 2M agent steps (the plateau of the RAM runs);
#   4. the late stage: the probes at 1M agent steps on every game (population engine), and the criterion table.
# Resumable: rerun to go on. WORKERS (default 2): branches trained at once.
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root: probes record their source as given, relative to it
here=results/probes
games="BeamRider SpaceInvaders Seaquest"
stage_snapshot() { ls "$here/trunks/$1/snapshots" 2>/dev/null | awk -v s="$2" '$0 + 0 >= s' | head -1; }
for game in $games; do
  until [ -n "$(stage_snapshot "$game" 150000)" ]; do TRUNK_MINUTES=3 bash "$here/trunks.sh" "$game"; done
done
probe() {  # probe <game> <agent steps> <out> [extra flags]
  rl-gns probe "$here/trunks/$1" --at "$2" --n-envs 2,4,8,16,32,64 --seeds 3 --lr-points 1 --steps passage --budget-steps 400000 \
    --target-rule noise --design fixed --no-censored --max-cost None --workers "${WORKERS:-2}" --threads-per-run 1 \
    --checkpoint-minutes 3 --out "$here/$1/$3" "${@:4}"
}
validate() { rl-gns validate-probes "$here"/*/ --out "$here/validation"; }
for game in $games; do probe "$game" 50000 at50k; done
validate
probe BeamRider 100000 at100k_retest --first-seed 3
for at in 100000 150000; do
  for game in $games; do probe "$game" "$at" "at$((at / 1000))k"; done
  validate
done
bash "$here/trunks.sh" $games
for game in $games; do probe "$game" 1000000 at1M --engine population; done
validate
