#!/usr/bin/env bash
# The BeamRider runs the docs quote: the README's 100k-step command, then a 1M-step run, each into its
# run directory beside this script. Works from any directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rl-gns train --env BeamRider --n-envs 8 --total-steps 100000 --out "$here/beamrider_100k" --overwrite --progress-bar False
rl-gns train --env BeamRider --n-envs 8 --total-steps 1000000 --out "$here/beamrider_1m" --overwrite --progress-bar False
