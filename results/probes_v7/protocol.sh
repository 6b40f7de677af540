#!/usr/bin/env bash
# The probe protocol of docs/prediction-criterion-v7.md on one game, in one command: v6's (results/probes_v6/protocol.sh:
# the trunk, the probes at the stages 1.95M, 1M and 0.5M agent steps with their reports, the criterion table) with
# rollout sizes 512 to 32,768 (4 envs, n_steps 128 to 8,192), a budget of 1,000,000 agent steps per branch, anchors of
# 400,000 agent steps, and seeds from 6, into results/probes_v7 (or HERE). Resumable: rerun the same command to go on.
# The flags below follow results/probes_v4/protocol.sh's own; where a flag is given twice, the last one counts.
# Usage: bash results/probes_v7/protocol.sh <Game> [stage in agent steps [extra rl-gns probe flags]]
set -euo pipefail
cd "$(dirname "$0")/../.."
game="$1"; shift
stages="${1:-1950000 1000000 500000}"; [ $# -gt 0 ] && shift
HERE="${HERE:-results/probes_v7}" \
  FLAGS="--delta-noise 3 6 --n-steps-grid 128 256 512 1024 2048 4096 8192 --budget-steps 1000000 --anchor-steps 400000 --first-seed 6" \
  exec bash results/probes_v4/protocol.sh "$game" "$stages" "$@"
