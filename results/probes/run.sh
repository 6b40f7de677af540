#!/usr/bin/env bash
# Every probe of docs/prediction-criterion-v2.md: the protocol on BeamRider, SpaceInvaders and Seaquest, and the
# test-retest of BeamRider at 100k agent steps (seeds 3-5, its own anchor). Resumable: rerun to go on.
# Ends with the criterion table over every finished probe (unfinished ones are listed and left out).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/protocol.sh" BeamRider
rl-gns probe "$here/trunks/BeamRider" --at 100000 --n-envs 2,4,8,16,32,64 --seeds 3 --budget-steps 400000 \
  --first-seed 3 --workers "${WORKERS:-2}" --threads-per-run 1 --checkpoint-minutes 3 --out "$here/BeamRider/at100k_retest"
bash "$here/protocol.sh" SpaceInvaders
bash "$here/protocol.sh" Seaquest
rl-gns validate-probes "$here"/*/ --out "$here/validation"
