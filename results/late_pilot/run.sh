#!/usr/bin/env bash
# Pilots for probes late in training: does a RAM agent on the CPU keep improving past the probes' trunks, whose
# score plateaus by 0.25-0.5M agent steps (results/probes/trunks)? Two recipes on Beam Rider, seed 0:
#  1. rl-zoo3's Atari settings on RAM (8 envs x 128 steps, minibatch 256, learning rate 2.5e-4 and clip decayed over
#     a 10M-step schedule), SB3's 64x64 MLP, the noise scale measured; stopped at 1.13M agent steps (SIGINT).
#  2. the trunks' settings with a 256x256 MLP (wide_mlp.py), 1M agent steps.
set -euo pipefail
cd "$(dirname "$0")/../.."
rl-gns train --env BeamRider --backend ram --n-envs 8 --n-steps 128 --minibatch-size 256 --learning-rate 2.5e-4 \
  --anneal --total-steps 10000000 --snapshot-steps 250000 --max-wall-minutes 45 --checkpoint-minutes 5 --seed 0 \
  --torch-threads 1 --out results/late_pilot/BeamRider_zoo
python results/late_pilot/wide_mlp.py --game BeamRider --agent-steps 1000000 --out results/late_pilot/BeamRider_wide
