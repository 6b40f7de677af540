#!/usr/bin/env bash
# Every probe of docs/prediction-criterion-v5.md: v4's games, stages, order and settings (results/probes_v4/run.sh)
# with a ladder of two targets (results/probes_v5/protocol.sh), into results/probes_v5; the criterion table after
# each stage. Resumable: rerun to go on. WORKERS (default 2): populations trained at once.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=results/probes_v5 exec bash results/probes_v4/run.sh
