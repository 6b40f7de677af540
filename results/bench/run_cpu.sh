#!/usr/bin/env bash
# The benchmark suite's cpu tier (envs/suites.toml): 7 games x 3 seeds x 50,000 agent steps with
# noise-scale logging, two runs at a time on 2 cores, then the report (bench/cpu/report.md).
# Rerunning skips finished runs and restarts unfinished ones.
set -euo pipefail
cd "$(dirname "$0")/.."
rl-gns bench --suite cpu --out bench/cpu
