#!/usr/bin/env bash
# Every probe of docs/prediction-criterion-v4.md on BeamRider, SpaceInvaders and Seaquest, from the trunks of
# results/probes/trunks.sh: stage 100k on every game, then the test-retest (Seaquest at 100k, seeds 3-5), then the
# stages 50k and 150k; the criterion table after each stage. v4 was stopped after its stage at 100k
# (docs/prediction-criterion-v5.md).
# Resumable: rerun to go on. WORKERS (default 2): populations trained at once. HERE (default results/probes_v4):
# where the probes go and whose protocol.sh runs them. What a later criterion changes (results/probes_v5/run.sh,
# results/probes_v6/run.sh): GAMES, FIRST (the stage probed first, and retested), RETEST (the game retested) and LATER
# (the stages after the retest), RETEST_SEED (default 3: the retest's first seed).
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root: probes record their source as given, relative to it
here=${HERE:-results/probes_v4}
games=${GAMES:-Seaquest SpaceInvaders BeamRider}
first=${FIRST:-100000}
validate() { rl-gns validate-probes "$here"/*/ --out "$here/validation"; }
for game in $games; do NO_TABLE=1 bash "$here/protocol.sh" "$game" "$first"; done
validate
NO_TABLE=1 SUFFIX=_retest bash "$here/protocol.sh" "${RETEST:-Seaquest}" "$first" --first-seed "${RETEST_SEED:-3}"
validate
for at in ${LATER:-50000 150000}; do
  for game in $games; do NO_TABLE=1 bash "$here/protocol.sh" "$game" "$at"; done
  validate
done
