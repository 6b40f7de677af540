#!/usr/bin/env bash
# Adaptive rollout size on Beam Rider from RAM, against the fixed-size sweep results/sweeps/beamrider_ram:
# same n_steps 32, M = 4 minibatches, 4 epochs, clip 0.1, noise scale measured on the whole rollout every
# iteration, stop at the highest target 525. Start at 4 envs with the sweep's square-root rule (5e-4 at
# 8 envs -> 3.54e-4 at 4 envs); n_envs grows to sqrt(r · M · B_simple(total)) / 32 (predictor env_xM_total), at most 64.
# One run at a time; works from any directory; rerunning skips finished runs (summary.json).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out=$here/adaptive_beamrider_ram
for r in 64 512; do
  for seed in 0 1; do
    run=$out/runs/r$(printf %04d $r)_s$seed
    [[ -f $run/summary.json ]] && continue
    mkdir -p "$run"
    rl-gns train --env BeamRider --backend ram --n-envs 4 --n-steps 32 --minibatch-size 32 --n-epochs 4 \
      --learning-rate 3.54e-4 --no-anneal --clip-range 0.1 --ent-coef 0.01 --gns-scheme envs --gns-every 1 \
      --adaptive-r $r --max-n-envs 64 --adaptive-predictor env_xM_total --stop-score 525 --total-steps 800000 \
      --seed $seed --torch-threads 1 --progress-bar False --overwrite --out "$run" > "$run/log.txt" 2>&1
  done
done
rl-gns compare-adaptive "$out" --fixed "$here/beamrider_ram"
