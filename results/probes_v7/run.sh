#!/usr/bin/env bash
# Every probe of docs/prediction-criterion-v7.md, from the trunks of results/probes/trunks.sh: v6's games and order
# (results/probes_v6/run.sh): the stage at 1.95M agent steps on Pong, Qbert and Alien, then the test-retest (Pong at
# 1.95M, seeds 9-11), then the stages 1M and 0.5M; the criterion table after each stage. Resumable: rerun to go on.
# WORKERS (default 2): populations trained at once.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=results/probes_v7 GAMES="Pong Qbert Alien" FIRST=1950000 RETEST=Pong RETEST_SEED=9 LATER="1000000 500000" \
  exec bash results/probes_v4/run.sh
