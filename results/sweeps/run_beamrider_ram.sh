#!/usr/bin/env bash
# The committed CPU sweep (report: results/sweeps/beamrider_ram/report.md). Beam Rider observed through its
# 128 RAM bytes with an MLP policy, because pixel PPO runs ~330 agent steps/s on 2 CPU cores.
# Rerunning the same command resumes: finished runs are skipped, unfinished ones restart. Works from any directory.
# The noise scale is measured on the whole rollout (scheme envs) every iteration: the MLP makes it cheap,
# and B_simple of the policy (thousands of samples) needs many measured samples to average.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)/beamrider_ram"
rl-gns sweep --env BeamRider --backend ram --targets 425,475,525 --n-envs 2,4,8,16,32,64 --seeds 2 \
  --n-steps 32 --lr-ref 5e-4 --n-envs-ref 8 --lr-points 2 --lr-factor 2 --budget-steps 800000 \
  --gns-scheme envs --gns-every 1 --workers 2 --threads-per-run 1 --out "$out"
rl-gns analyze "$out"
