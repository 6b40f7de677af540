#!/usr/bin/env bash
# Data-parallel PPO on this machine: the README's 100k-step Beam Rider run on 2 ranks (4 envs each) and on one
# process (8 envs), one after the other on an idle machine, then their comparison (throughput, and the free noise
# scale against the fixed-parameter one). Works from any directory; --report-only redoes the comparison alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=results/data_parallel
common=(--env BeamRider --n-envs 8 --total-steps 100000 --overwrite --progress-bar False)
if [[ "${1:-}" != "--report-only" ]]; then
  rl-gns train "${common[@]}" --nproc 2 --out "$here/beamrider_100k_nproc2"
  rl-gns train "${common[@]}" --out "$here/beamrider_100k_nproc1"
fi
python benchmarks/data_parallel.py --one "$here/beamrider_100k_nproc1" --ranks "$here/beamrider_100k_nproc2" --out "$here"
