#!/usr/bin/env bash
# Trunk runs of the probes: one 2M-agent-step RAM run per game with the validation pilots' settings (8 envs,
# n_steps 32, M = 4, learning rate 5e-4 constant), keeping the agent every 50k agent steps (snapshots/) for
# `rl-gns probe --at`. Resumable: rerun to go on (a finished game is skipped, an unfinished one resumes).
# Usage: bash results/probes/trunks.sh [Game ...]   (default: BeamRider SpaceInvaders Seaquest)
#   TRUNK_MINUTES (optional): stop each trunk cleanly after this many minutes (rerun to go on).
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root: probes record their source as given, relative to it
here=results/probes
for game in "${@:-BeamRider SpaceInvaders Seaquest}"; do
  for g in $game; do
    out="$here/trunks/$g"
    if [ -f "$out/summary.json" ]; then continue; fi
    if [ -f "$out/config.json" ]; then
      rl-gns train --resume "$out" --torch-threads 1 --progress-bar False ${TRUNK_MINUTES:+--max-wall-minutes "$TRUNK_MINUTES"}
    else
      rl-gns train --env "$g" --backend ram --n-envs 8 --n-steps 32 --minibatch-size 64 --n-epochs 4 \
        --learning-rate 5e-4 --no-anneal --total-steps 2000000 --no-gns --snapshot-steps 50000 \
        --checkpoint-minutes 5 --torch-threads 1 --progress-bar False --out "$out" \
        ${TRUNK_MINUTES:+--max-wall-minutes "$TRUNK_MINUTES"}
    fi
  done
done
