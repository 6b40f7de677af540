#!/usr/bin/env bash
# Env-count scaling of PPO on Beam Rider on this machine (rl-gns scaling), 4 timed iterations per
# n_envs after a warm-up, then the throughput model and the wall-time prediction from the RAM sweep's
# fitted S(B) and the 1M-step run's noise scale. Rerunning skips measured n_envs. Works from any directory.
set -euo pipefail
results="$(cd "$(dirname "$0")/.." && pwd)"
predict=(--sweep "$results/sweeps/beamrider_ram" --noise-run "$results/runs/beamrider_1m" --devices 1,2,4,8)
# a sweep's protocol: n_steps, M = 4 minibatches and epochs fixed, so the minibatch grows with n_envs
rl-gns scaling --env BeamRider --n-envs 1,2,4,8,16,32,64,128,256 --out "$results/scaling/beamrider" "${predict[@]}"
# rl-zoo3's protocol: minibatch fixed at 256 samples, so the gradient steps per iteration grow with n_envs
rl-gns scaling --env BeamRider --n-envs 8,16,32,64,128,256 --minibatch-size 256 --iterations 4 \
  --out "$results/scaling/beamrider_zoo" "${predict[@]}"
