#!/usr/bin/env bash
# The probe protocol of docs/prediction-criterion-v3.md on one game, in one command: its trunk run (2M agent steps,
# RAM, results/probes/trunks.sh), then rl-gns probe at its stages, each with its report, then the criterion table of
# every finished probe. Every step is resumable: rerun the same command to go on.
# Usage: bash results/probes_v3/protocol.sh <Game> [stage in agent steps [extra rl-gns probe flags]]
#   without a stage: the stages 50k, 100k and 150k.  WORKERS (default 2): populations trained at once.
#   SUFFIX (optional): appended to each probe directory (a retest: SUFFIX=_retest ... --first-seed 3).
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root: probes record their source as given, relative to it
here=results/probes_v3
game="$1"; shift
stages="${1:-50000 100000 150000}"; [ $# -gt 0 ] && shift
bash results/probes/trunks.sh "$game"
for at in $stages; do
  rl-gns probe "results/probes/trunks/$game" --at "$at" --n-envs 4,8,16,32,64,128 --seeds 3 \
    --lr-points 3 --lr-factor 2 --steps passage --budget-steps 400000 --target-rule noise --design fixed --no-censored \
    --max-cost None --engine population --workers "${WORKERS:-2}" \
    --threads-per-run 1 --checkpoint-minutes 3 --out "$here/$game/at$((at / 1000))k${SUFFIX:-}" "$@"
done
[ -n "${NO_TABLE:-}" ] || rl-gns validate-probes "$here"/*/ --out "$here/validation"
