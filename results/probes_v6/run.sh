#!/usr/bin/env bash
# Every probe of docs/prediction-criterion-v6.md, from the trunks of results/probes/trunks.sh: v4's order
# (results/probes_v4/run.sh) on Pong, Qbert and Alien (the third game by the criterion's rule): the stage at 1.95M
# agent steps on every game, then the test-retest (Pong at 1.95M, seeds 3-5), then the stages 1M and 0.5M; the
# criterion table after each stage. Resumable: rerun to go on. WORKERS (default 2): populations trained at once.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=results/probes_v6 GAMES="Pong Qbert Alien" FIRST=1950000 RETEST=Pong LATER="1000000 500000" \
  exec bash results/probes_v4/run.sh
