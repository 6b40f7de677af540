#!/usr/bin/env bash
# The probe protocol of docs/prediction-criterion-v5.md on one game, in one command: v4's (results/probes_v4/protocol.sh:
# the trunk, the probes at its stages with their reports, the criterion table) with the targets --delta-noise 3 6,
# into results/probes_v5 (or HERE). Resumable: rerun the same command to go on.
# Usage: bash results/probes_v5/protocol.sh <Game> [stage in agent steps [extra rl-gns probe flags]]
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE="${HERE:-results/probes_v5}" FLAGS="--delta-noise 3 6" exec bash results/probes_v4/protocol.sh "$@"
