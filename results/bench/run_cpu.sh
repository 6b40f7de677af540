#!/usr/bin/env bash
# The benchmark suite's cpu tier (envs/suites.toml): 7 games x 3 seeds x 80,000 agent steps with
# noise-scale logging, two runs at a time on 2 cores, then the report (results/bench/cpu/report.md),
# with the fitted B_crit of the Beam Rider RAM sweep next to its game. Works from any directory;
# rerunning skips finished runs and restarts unfinished ones.
set -euo pipefail
results="$(cd "$(dirname "$0")/.." && pwd)"
rl-gns bench --suite cpu --out "$results/bench/cpu" --sweeps "$results/sweeps/beamrider_ram"
