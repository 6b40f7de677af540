#!/usr/bin/env bash
# The BeamRider runs quoted in README.md: the README's 100k-step command, then a 1M-step run.
# Each writes its run directory under results/ (progress.csv, config.json, summary.json, training.png).
set -euo pipefail
rl-gns train --env BeamRider --n-envs 8 --total-steps 100000 --out results/beamrider_100k --overwrite --progress-bar False
rl-gns train --env BeamRider --n-envs 8 --total-steps 1000000 --out results/beamrider_1m --overwrite --progress-bar False
