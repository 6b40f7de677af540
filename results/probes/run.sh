#!/usr/bin/env bash
# Probes of the committed Beam Rider RAM pilot (results/validation/pilots/BeamRider: 200k agent steps, 8 envs,
# n_steps 32, M = 4, learning rate 5e-4, running score ~560) at its end: 6 env counts (rollout sizes 64-2,048, 32x),
# 3 seeds each, to the source's running score (20 games) + 100. The second probe is the test-retest: the same
# branch point with disjoint seeds. Resumable: rerun this script to go on (finished branches are skipped).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
common=(results/validation/pilots/BeamRider --delta 100 --n-envs 2,4,8,16,32,64 --seeds 3 --budget-steps 300000
        --checkpoint-minutes 2 --workers "${WORKERS:-1}" --max-wall-minutes "${MINUTES:-600}")
rl-gns probe "${common[@]}" --out "$here/beamrider_ram_200k_d100"
rl-gns probe "${common[@]}" --first-seed 3 --out "$here/beamrider_ram_200k_d100_retest"
