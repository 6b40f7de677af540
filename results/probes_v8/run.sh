#!/usr/bin/env bash
# Every probe of criterion v8 (docs/prediction-criterion.md, notes of 2026-12-04), in this order, each by
# results/probes_v8/protocol.sh; a probe whose pilot passes no null floor ends in one line (exit status 2), and the next
# starts; where v8's design set a target, the design on trial follows at the same point: the cheap design (the note of
# 19:30 UTC) where it has run, else the censored one that replaces it (the note of 23:02 UTC).
# Then Table 1 and v8's table over the reported probes of v8's design (results/probes_v8/table.md).
# Resumable: rerun to go on (a finished probe, or one without a target, is not trained again).
set -euo pipefail
cd "$(dirname "$0")/../.."
for probe in "Breakout 250000" "Breakout 500000" "Pong 500000" "Qbert 500000" "MsPacman 500000" "Pong 500000 retest" \
  "Pong 1000000" "Qbert 1000000" "MsPacman 1000000" "Alien 500000" "Alien 1000000"; do
  read -r -a args <<< "$probe"
  status=0
  bash results/probes_v8/protocol.sh "${args[@]}" || status=$?
  if [[ $status -ne 0 && $status -ne 2 ]]; then exit "$status"; fi
  if [[ $status -eq 0 && ${#args[@]} -eq 2 ]]; then  # the trial design's own pilot may pass no floor (status 2)
    trial=censored
    if [[ -d "results/probes_v8/${args[0]}/at$((args[1] / 1000))k_cheap" ]]; then trial=cheap; fi
    status=0
    bash results/probes_v8/protocol.sh "${args[@]}" "$trial" || status=$?
    if [[ $status -ne 0 && $status -ne 2 ]]; then exit "$status"; fi
  fi
done
reported=()
for probe_dir in results/probes_v8/*/at*[0-9]k/ results/probes_v8/*/at*k_retest/; do
  if [[ -f "$probe_dir/probe_results.json" ]]; then reported+=("$probe_dir"); fi
done
if [[ ${#reported[@]} -gt 0 ]]; then rl-gns table "${reported[@]}" --out results/probes_v8/table.md; fi
