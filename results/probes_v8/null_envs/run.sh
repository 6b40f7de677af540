#!/usr/bin/env bash
# A check of the null floor of envs that reset together (docs/probe.md, "False crossings"): real branches that learn
# nothing (learning rate 0) from a v8 branch point, at the largest env count of the probe's grid, for one branch budget.
# Each plays as a probe's branch does (all envs reset together); benchmarks/null_envs.py compares its running score with
# the null branches drawn from the probe's anchor games, in any order and as envs that reset together.
# Usage: bash results/probes_v8/null_envs/run.sh GAME STAGE N_ENVS SEED (resumable: a finished run is kept)
set -euo pipefail
cd "$(dirname "$0")/../../.."
game="$1"; at="$2"; n_envs="$3"; seed="$4"
out="results/probes_v8/null_envs/${game}_at$((at / 1000))k_n${n_envs}_s${seed}"
if [[ -f "$out/summary.json" ]]; then echo "$out: finished"; exit 0; fi
snapshot="$(ls results/probes/trunks/"$game"/snapshots/*.zip | awk -F/ -v at="$at" '{n = $NF; sub(/\.zip$/, "", n); if (n + 0 >= at) {print; exit}}')"
if [[ -f "$out/config.json" ]]; then rl-gns train --resume "$out" --torch-threads 1 --progress-bar False; exit 0; fi
rl-gns train --env "$game" --backend ram --n-envs "$n_envs" --n-steps 32 --minibatch-size "$((n_envs * 8))" --n-epochs 4 \
  --learning-rate 0 --no-anneal --total-steps "$((at / 2))" --no-gns --init-from "$snapshot" --seed "$seed" \
  --checkpoint-minutes 5 --torch-threads 1 --progress-bar False --out "$out"
