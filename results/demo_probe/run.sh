#!/usr/bin/env bash
# What a user runs to learn the critical rollout size of their own run: a fresh training run with noise-scale
# logging that keeps an agent at 100,000 agent steps, then a probe of that agent (6 rollout sizes spanning 32x, one
# seed each: a small probe; the protocol's probes take three seeds and three learning rates per size).
# Both commands print their answers; output.txt keeps them. Rerun: a finished training run is kept (an unfinished
# one starts over), and the probe skips its finished branches.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=results/demo_probe
{
  if [ ! -f "$here/run/summary.json" ]; then
    rl-gns train --env Breakout --backend ram --total-steps 200000 --snapshot-steps 100000 --seed 0 \
      --progress-bar False --out "$here/run" --overwrite
  fi
  rl-gns probe "$here/run" --at 100000 --anchor-steps 50000 --n-envs 2 4 8 16 32 64 --seeds 1 --lr-points 1 --steps passage \
    --budget-steps 150000 --target-rule noise --design fixed --no-censored --max-cost None --workers 2 --out "$here/probe"
} 2>&1 | tee -a "$here/output.txt"
