#!/usr/bin/env bash
# Every probe of criterion v8 (docs/prediction-criterion.md, its notes of 2026-12-04 and 2026-12-05), each by
# results/probes_v8/protocol.sh, in this order; a probe whose pilot passes no null floor ends in one line (exit status
# 2), and the next starts.
#   1. Where they ran: v8's design at 500k (Breakout also at 250k), its retest on Pong, and the cheap and wide trials on
#      Pong at 500k.
#   2. From the note of 2026-12-05 (08:24 UTC): the censored design alone (capped at 5x the run) at every later point,
#      and a retest of it with disjoint seeds at the first of those points that identifies B_crit; Qbert and Alien at
#      1.95M left out by the note of 22:26 UTC (Qbert's stopped before its branches finished).
#   3. From the note of 2026-12-05 (22:26 UTC): the 1.95M stages again under the null floor of envs that reset
#      together, and the retest at the first that identifies B_crit.
#   4. From the note of 2026-12-06 (00:55 UTC): at the 1.95M stages, n_steps varied at the trunk's 8 envs (rollouts to 16,384,
#      32,768 held back), with its retest at the first that identifies B_crit; run before Alien's probe of 3.
#   5. From the note of 2026-12-06 (04:23 UTC): every censored probe under a cap of 10x, those stopped at 5x going on, in
#      the order below: env counts (3) at Pong and Qbert first, then n_steps (4), then 2's Pong at 1.95M and 3's Alien.
#   6. From the note of 2026-12-06 (07:26 UTC): Qbert's n_steps probe at 1.95M again with disjoint seeds, before the
#      n_steps series goes on (its second fit, from the size of least experience up, identified B_crit).
#   7. From the note of 2026-12-06 (10:32 UTC): Breakout, never probed before, at 1M and 1.95M in the n_steps series,
#      after Alien (its trunk trained again by results/probes/trunks.sh, for its snapshots); its outcome note of 12:04
#      UTC adds 1.25M (no target at 1.95M).
#   8. From the note of 2026-12-06 (13:43 UTC): Qbert at 1.5M in the n_steps series, from its trunk trained again
#      (results/probes/trunks.sh), which departs from the committed one and is kept beside it (results/probes_v8/trunks).
#   9. From the note of 2026-12-06 (14:52 UTC): Pong at 500k in the n_steps series.
#  10. From the notes of 2026-12-07: Pong's retest at 500k and Pong at 1M (02:10, 02:49 UTC), then Qbert and Alien at
#      1M and 500k (05:17 UTC), then Breakout at 500k and Ms. Pac-Man at 1M and 500k (06:20 UTC), in the n_steps
#      series (those two trunks' snapshots restored from the history first: results/README.md).
#  11. From the notes of 2026-12-07 (11:40, 13:56 and 14:48 UTC): fresh trunks (results/probes_v8/trunks/<Game>_s<seed>), each
#      probed at 500k with the gated design.
# Then Table 1 and v8's table over the reported probes of v8's design (results/probes_v8/table.md).
# Resumable: rerun to go on (a finished probe, or one without a target, is not trained again).
set -euo pipefail
cd "$(dirname "$0")/../.."

probe() {  # probe GAME STAGE [VARIANT]: one probe; a pilot that passes no null floor (status 2) is not a failure
  local status=0
  bash results/probes_v8/protocol.sh "$@" || status=$?
  if [[ $status -ne 0 && $status -ne 2 ]]; then exit "$status"; fi
  return 0
}

for point in "Breakout 250000" "Breakout 500000" "Pong 500000" "Qbert 500000" "MsPacman 500000" "Pong 500000 retest" \
  "Pong 500000 cheap" "Pong 500000 wide"; do
  read -r -a args <<< "$point"
  probe "${args[@]}"
done

# series VARIANT POINT...: the VARIANT probe at each point ("GAME STAGE"), in order, and VARIANT_retest at the first
# whose B_crit is identified, unless a VARIANT_retest was started at another point (by an earlier series of VARIANT)
series() {
  local variant="$1" retested="" point probe_dir elsewhere
  shift
  for point in "$@"; do
    read -r -a args <<< "$point"
    probe "${args[@]}" "$variant"
    probe_dir="results/probes_v8/${args[0]}/at$((args[1] / 1000))k_$variant"
    elsewhere="$(compgen -G "results/probes_v8/*/at*k_${variant}_retest" | grep -vx "${probe_dir}_retest" || true)"
    if [[ -z "$retested" && -z "$elsewhere" && -f "$probe_dir/probe_results.json" ]] \
      && python -c "import json, sys; sys.exit(not (json.load(open(sys.argv[1]))['fit'] or {}).get('identified'))" \
        "$probe_dir/probe_results.json"; then
      retested=1
      probe "${args[@]}" "${variant}_retest"
    fi
  done
}

series censored_envs "Pong 1950000" "Qbert 1950000"
probe Qbert 1950000 censored_steps_retest  # the note of 2026-12-06 (07:26 UTC): its second fit identified B_crit
series censored_steps "Pong 1950000" "Qbert 1950000" "Alien 1950000" "Breakout 1000000" "Breakout 1950000" \
  "Breakout 1250000"
TRUNK=results/probes_v8/trunks/Qbert probe Qbert 1500000 censored_steps
probe Pong 500000 censored_steps  # the note of 2026-12-06 (14:52 UTC): the n_steps design at 500k, no retest
probe Pong 500000 censored_steps_retest  # the note of 2026-12-07: a retest of its fit bounded on both sides
probe Pong 1000000 censored_steps  # the note of 2026-12-07: the n_steps design at Pong 1M
for point in "Qbert 1000000" "Alien 1000000" "Qbert 500000" "Alien 500000"; do  # the note of 2026-12-07 (05:17 UTC)
  read -r -a args <<< "$point"
  probe "${args[@]}" censored_steps
done
TRUNK=results/probes_v8/trunks/Breakout probe Breakout 500000 censored_steps  # the note of 2026-12-07 (06:20 UTC)
probe MsPacman 1000000 censored_steps
probe MsPacman 500000 censored_steps
TRUNK=results/probes_v8/trunks/Breakout probe Breakout 250000 censored_steps_least2  # the note of 2026-12-07 (11:19 UTC)
fresh() {  # fresh GAME SEED: a new trunk with the committed trunks' settings, to 510,000 agent steps (snapshot at 500,224)
  local out="results/probes_v8/trunks/$1_s$2"
  if [[ -f "$out/summary.json" ]]; then return 0; fi
  if [[ -f "$out/config.json" ]]; then rl-gns train --resume "$out" --torch-threads 1 --progress-bar False; else
    rl-gns train --env "$1" --backend ram --n-envs 8 --n-steps 32 --minibatch-size 64 --n-epochs 4 --learning-rate 5e-4 \
      --no-anneal --total-steps 510000 --seed "$2" --no-gns --snapshot-steps 250000 --checkpoint-minutes 5 --torch-threads 1 \
      --progress-bar False --out "$out"
  fi
}
fresh Pong 1  # the note of 2026-12-07 (11:40 UTC): a fresh Pong trunk, probed at 500k, gated
TRUNK=results/probes_v8/trunks/Pong_s1 probe Pong 500000 censored_steps_gated
# the notes of 2026-12-07 (13:56 UTC): four more, gated; (14:48 UTC): two more
for trunk in Pong_s2 Breakout_s1 Pong_s3 Breakout_s2 Pong_s4 Breakout_s3; do
  fresh "${trunk%_s*}" "${trunk#*_s}"
  NAME="$trunk" TRUNK="results/probes_v8/trunks/$trunk" probe "${trunk%_s*}" 500000 censored_steps_gated
done
series censored "Pong 1000000" "Alien 500000" "Alien 1000000" "Qbert 1000000" "MsPacman 1000000" "Pong 1950000"
series censored_envs "Alien 1950000"

reported=()
for probe_dir in results/probes_v8/*/at*/; do  # v8's design: at<k>k and its retest at<k>k_retest, no trial design
  if [[ "$(basename "$probe_dir")" =~ ^at[0-9]+k(_retest)?$ && -f "$probe_dir/probe_results.json" ]]; then
    if [[ -d "$probe_dir/runs" ]]; then reported+=("$probe_dir"); else
      echo "$probe_dir: left out of v8's table, its branches are kept in the history (results/README.md restores them)" >&2
    fi
  fi
done
if [[ ${#reported[@]} -gt 0 ]]; then rl-gns table "${reported[@]}" --out results/probes_v8/table.md; fi
