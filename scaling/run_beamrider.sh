#!/usr/bin/env bash
# Env-count scaling of PPO on Beam Rider on this machine (rl-gns scaling): n_envs 1..256, 4 timed
# iterations each after a warm-up, then the throughput model and the wall-time prediction from the
# RAM sweep's fitted S(B) and the 1M-step run's noise scale. Rerunning skips measured n_envs.
set -euo pipefail
cd "$(dirname "$0")/.."
rl-gns scaling --env BeamRider --n-envs 1,2,4,8,16,32,64,128,256 --out scaling/beamrider \
    --sweep sweeps/beamrider_ram --noise-run results/beamrider_1m --devices 1,2,4,8
