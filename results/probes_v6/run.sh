#!/usr/bin/env bash
# Every probe of docs/prediction-criterion-v6.md, from the trunks of results/probes/trunks.sh: the stage at 1.95M agent
# steps on every game, then the test-retest (Pong at 1.95M, seeds 3-5), then the stages 1M and 0.5M; the criterion
# table after each stage. Resumable: rerun to go on. WORKERS (default 2): populations trained at once.
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root: probes record their source as given, relative to it
here=results/probes_v6
games="Pong Qbert Alien"  # Alien: the third game by the criterion's rule (its pilot, 2026-11-25)
validate() { rl-gns validate-probes "$here"/*/ --out "$here/validation"; }
for game in $games; do NO_TABLE=1 bash "$here/protocol.sh" "$game" 1950000; done
validate
NO_TABLE=1 SUFFIX=_retest bash "$here/protocol.sh" Pong 1950000 --first-seed 3
validate
for at in 1000000 500000; do
  for game in $games; do NO_TABLE=1 bash "$here/protocol.sh" "$game" "$at"; done
  validate
done
