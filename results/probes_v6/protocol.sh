#!/usr/bin/env bash
# The probe protocol of docs/prediction-criterion-v6.md on one game, in one command: v5's (results/probes_v5/protocol.sh:
# the trunk, the probes at its stages with their reports, the criterion table) at the stages 1.95M, 1M and 0.5M agent
# steps, into results/probes_v6 (or HERE). Resumable: rerun the same command to go on.
# Usage: bash results/probes_v6/protocol.sh <Game> [stage in agent steps [extra rl-gns probe flags]]
set -euo pipefail
cd "$(dirname "$0")/../.."
game="$1"; shift
stages="${1:-1950000 1000000 500000}"; [ $# -gt 0 ] && shift
HERE="${HERE:-results/probes_v6}" exec bash results/probes_v5/protocol.sh "$game" "$stages" "$@"
