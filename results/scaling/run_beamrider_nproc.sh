#!/usr/bin/env bash
# Data-parallel scaling on this machine: PPO on Beam Rider at 4, 8 and 16 envs, each on one process and on 2 ranks
# (rl-gns scaling --nproc 1,2), all measured in one session so that they compare; the throughput model is fitted on
# the one-process rows and predicts the ranks' (ideal) speedup. Rerunning skips measured rows. Works from any
# directory.
set -euo pipefail
results="$(cd "$(dirname "$0")/.." && pwd)"
rl-gns scaling --env BeamRider --n-envs 4,8,16 --nproc 1,2 --out "$results/scaling/beamrider_nproc" --devices 1,2
