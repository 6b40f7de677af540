#!/usr/bin/env bash
# Validation sweeps of the critical-rollout prediction (protocol: docs/prediction-criterion.md).
# Rerunning resumes: finished runs are skipped. Each game's sweep is analysed when it finishes.
# Usage: bash results/validation/run.sh [Game ...]   (default: all four, in this order)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# Pilots (targets): one run per game at 8 envs, then `python results/validation/pilot_targets.py`.
pilot() {
  [ -f "$here/pilots/$1/summary.json" ] || rl-gns train --env "$1" --backend ram --n-envs 8 --n-steps 32 \
    --minibatch-size 64 --n-epochs 4 --learning-rate 5e-4 --no-anneal --total-steps 200000 --no-gns \
    --torch-threads 1 --progress-bar False --out "$here/pilots/$1" --overwrite
}

declare -A targets=(
  [SpaceInvaders]=180,220,250
  [Seaquest]=220,280,340
  [Breakout]=3.5,5.6,7.8
  [BeamRider]=450,520,590
)

for game in "${@:-SpaceInvaders Seaquest BeamRider Breakout}"; do
  for g in $game; do
    pilot "$g"
    out="$here/$(echo "$g" | tr '[:upper:]' '[:lower:]')"
    rl-gns sweep --env "$g" --backend ram --targets "${targets[$g]}" --n-envs 2,4,8,16,32 --seeds 3 \
      --n-steps 32 --n-minibatches 4 --lr-ref 5e-4 --n-envs-ref 8 --lr-points 2 --lr-factor 2 \
      --budget-steps 300000 --gns-scheme minibatch envs --gns-every 1 --workers 2 --threads-per-run 1 --out "$out"
    rl-gns analyze "$out"
  done
done
