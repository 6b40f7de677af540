#!/usr/bin/env bash
# Criterion v8's probes (docs/prediction-criterion.md, "Probes in v8", and its note of 2026-12-04), one command per
# probe: the trunk (results/probes/trunks.sh's settings: 8 envs x n_steps 32, learning rate 5e-4 constant, RAM), then
# rl-gns probe at one stage with the v8 apparatus: n_envs varied at the trunk's n_steps (2-64 envs, its own 8 among
# them), targets from the null floor and a pilot (--target-rule pilot), the sequential design with the learning rate
# tuned on a grid of 3 in its first round, steps by the trend measure, a branch budget of half the stage.
# Resumable: rerun the same command to go on; an ended probe is not run again.
# Usage: bash results/probes_v8/protocol.sh <Game> <stage in agent steps> [VARIANT]
#   retest: a second probe of the same point with disjoint seeds (branches, anchor and pilot from --first-seed 3);
#   cheap: the cheaper design on trial (the criterion's note of 2026-12-04, 19:30 UTC): one learning rate per size (the
#   sqrt rule's) and the lower target only, seeds from 6.
#   wide: the cheap design on a grid to 256 envs whose 2 largest sizes are held back (the note of 20:43 UTC), seeds
#   from 9.
#   censored: the cheap design fitted with the branches that did not reach the target as censored (--censored, the
#   note of 23:02 UTC), seeds from 12, capped at 5x the run (--max-cost 5, the note of 2026-12-05).
#   censored_retest: the censored design again with disjoint seeds (from 15; the note of 2026-12-05).
#   censored_envs: the censored design in a new directory, seeds from 18, so that its null floor is that of envs that
#   reset together (rl-gns probe's since the note of 2026-12-05, 22:26 UTC); censored_envs_retest: again, from 21.
#   censored_steps: the censored design with n_steps varied at the trunk's 8 envs, rollouts of 64 to 16,384 agent steps
#   (x4 apart) and 32,768 held back (the note of 2026-12-06, 00:55 UTC), seeds from 24; censored_steps_retest: again,
#   from 27.
#   censored_steps_least2: censored_steps that stops after a round at whose end fewer than 2 rollout sizes reached the
#   target (--least-sizes 2, the note of 2026-12-07, 11:19 UTC), seeds from 24.
#   censored_steps_gated: censored_steps_least2 whose pilot sets a target only where its later games beat the anchor's
#   by 3 standard errors, its drift counted (--least-pilot-gain 3, the note of 2026-12-07, 11:38 UTC), seeds from 30.
#   TRUNK (optional): the trunk's directory, if not results/probes/trunks/<Game> (a trunk trained again that departs from
#   the committed one is kept beside it; the criterion's note of 2026-12-06, 13:43 UTC).
#   NAME (optional): the directory under results/probes_v8 that holds the probe, if not <Game> (a probe of a fresh
#   trunk: <Game>_s<seed>, the criterion's note of 2026-12-07, 13:56 UTC).
#   Every censored variant runs under --max-cost 10 since the note of 2026-12-06 (04:23 UTC), 5 before it: a probe that
#   stopped at the cap goes on from its recorded rounds.
set -euo pipefail
variants="retest|cheap|wide|censored|censored_retest|censored_envs|censored_envs_retest|censored_steps|censored_steps_retest|censored_steps_least2|censored_steps_gated"
usage="usage: bash results/probes_v8/protocol.sh <Game> <stage in agent steps> [$variants]"
if [[ $# -lt 2 || $# -gt 3 ]]; then echo "$usage" >&2; exit 2; fi
if [[ -n "${3:-}" && "|$variants|" != *"|$3|"* ]]; then echo "$usage" >&2; exit 2; fi
game="$1"; at="$2"; variant="${3:-}"
cd "$(dirname "$0")/../.."  # the repository root: probes record their source as given, relative to it
here="${HERE:-results/probes_v8}"
trunk="${TRUNK:-results/probes/trunks/$game}"
if [[ ! -d "$trunk/snapshots" ]]; then  # committed without its snapshots: train it again to 1M, keeping one every 250k
  trunk="$here/trunks/$game"
  if [[ ! -f "$trunk/summary.json" ]]; then
    if [[ -f "$trunk/config.json" ]]; then rl-gns train --resume "$trunk" --torch-threads 1 --progress-bar False; else
      rl-gns train --env "$game" --backend ram --n-envs 8 --n-steps 32 --minibatch-size 64 --n-epochs 4 \
        --learning-rate 5e-4 --no-anneal --total-steps 1000256 --no-gns --snapshot-steps 250000 \
        --checkpoint-minutes 5 --torch-threads 1 --progress-bar False --out "$trunk"
    fi
  fi
fi
out="$here/${NAME:-$game}/at$((at / 1000))k${variant:+_$variant}"
# An ended probe is not run again (a rerun would rewrite its records): one that stopped (probe.json's "stopped") other
# than at the cost cap, or whose pilot set no target (status 2, as when it ended).
if [[ -f "$out/probe.json" ]]; then
  ended="$(python -c "import json, sys; from rl_gns.experiments.probe import no_target; p = json.load(open(sys.argv[1]))
print('stopped' if p.get('stopped') and '--max-cost' not in p['stopped'] else 'no target' if no_target(p) else '')" \
    "$out/probe.json")"
  if [[ "$ended" == stopped ]]; then echo "$out: ended (rl-gns probe-report $out writes its report again)"; exit 0; fi
  if [[ "$ended" == "no target" ]]; then echo "$out: ended without a target (the pilot passed no null floor)" >&2; exit 2; fi
fi
case "$variant" in
  "") design=(--lr-points 3 --no-lowest-target-only --first-seed 0 --no-censored --max-cost None) ;;
  retest) design=(--lr-points 3 --no-lowest-target-only --first-seed 3 --no-censored --max-cost None) ;;
  cheap) design=(--lr-points 1 --lowest-target-only --first-seed 6 --no-censored --max-cost None) ;;
  wide) design=(--lr-points 1 --lowest-target-only --first-seed 9 --n-envs 2 4 8 16 32 64 128 256 --held-back 2
    --no-censored --max-cost None) ;;
  censored) design=(--lr-points 1 --lowest-target-only --first-seed 12 --censored --max-cost 10) ;;
  censored_retest) design=(--lr-points 1 --lowest-target-only --first-seed 15 --censored --max-cost 10) ;;
  censored_envs) design=(--lr-points 1 --lowest-target-only --first-seed 18 --censored --max-cost 10) ;;
  censored_envs_retest) design=(--lr-points 1 --lowest-target-only --first-seed 21 --censored --max-cost 10) ;;
  censored_steps | censored_steps_retest | censored_steps_least2 | censored_steps_gated)
    first=24; if [[ $variant == censored_steps_retest ]]; then first=27; elif [[ $variant == censored_steps_gated ]]; then first=30; fi
    design=(--lr-points 1 --lowest-target-only --first-seed "$first" --censored --max-cost 10
      --n-steps-grid 8 32 128 512 2048 4096 --held-back 1)
    case "$variant" in
      censored_steps_least2) design+=(--least-sizes 2) ;;
      censored_steps_gated) design+=(--least-sizes 2 --least-pilot-gain 3) ;;
    esac ;;
esac
rl-gns probe "$trunk" --at "$at" --target-rule pilot --design sequential --seeds 3 "${design[@]}" --steps trend \
  --budget-steps "$((at / 2))" --engine population --workers "${WORKERS:-2}" --threads-per-run 1 \
  --checkpoint-minutes 5 --out "$out"
