#!/usr/bin/env bash
# The probe protocol of docs/prediction-criterion-v2.md on one game, in one command: the trunk run (2M agent steps,
# RAM), then rl-gns probe at its stages (first snapshots at or past 50k, 100k and 150k agent steps: the part of
# training that still improves with this protocol), each with its report. Every step is resumable: rerun the same command to go on.
# Usage: bash results/probes/protocol.sh <Game> [extra rl-gns probe flags]
#   WORKERS (default 2): branches trained at once.
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root: probes record their source as given, relative to it
here=results/probes
game="$1"; shift
bash "$here/trunks.sh" "$game"
trunk="$here/trunks/$game"
for at in 50000 100000 150000; do
  rl-gns probe "$trunk" --at "$at" --n-envs 2,4,8,16,32,64 --seeds 3 --lr-points 1 --steps passage --budget-steps 400000 \
    --target-rule noise --design fixed --no-censored --max-cost None --workers "${WORKERS:-2}" --threads-per-run 1 \
    --checkpoint-minutes 3 --out "$here/$game/at$((at / 1000))k" "$@"
done
rl-gns validate-probes "$here"/*/ --out "$here/validation"  # every finished probe so far
