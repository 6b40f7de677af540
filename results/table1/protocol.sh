#!/usr/bin/env bash
# Criterion v8's protocol on one game (docs/prediction-criterion.md): null run -> pilot -> targets -> sweep and its edge
# rounds -> targets at the rates tried -> analyze -> Table 1 and the criterion over the games analysed -> the ladder.
# Usage: bash results/table1/protocol.sh <Game> [R0|R1|R2|R3|R4]   (R0, the one-step regime, by default)
# Resumable: rerun the same command; finished runs are kept, unfinished ones go on from their checkpoints.
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 ]]; then echo "usage: bash results/table1/protocol.sh <Game> [R0|R1|R2|R3|R4]" >&2; exit 2; fi
game="$1"
rung="${2:-R0}"
cd "$(dirname "$0")/../.."
# The protocol's sizes, fixed by v8; each may be set smaller from the environment for a smoke test of the command.
table1="${TABLE1_DIR:-results/table1}"          # where each game's directory goes
null_steps="${NULL_STEPS:-300000}"               # the null run's agent steps
pilot_steps="${PILOT_STEPS:-1000000}"            # the pilot's agent steps
budget="${BUDGET:-500000}"                       # agent steps per run of the sweep
read -r -a sizes <<< "${SIZES:-8 16 32 64 128 256}"  # the sweep's n_envs
seeds="${SEEDS:-3}"
dir="$table1/$game/$rung"

# The ladder (v8): one factor at a time from the one-step regime to PPO's recipe.
case "$rung" in
  R0) ladder=() ;;
  R1) ladder=(--optimizer adam) ;;
  R2) ladder=(--optimizer adam --n-minibatches 4 --clip-range 1e9) ;;
  R3) ladder=(--optimizer adam --n-minibatches 4 --n-epochs 4 --clip-range 1e9) ;;
  R4) ladder=(--optimizer adam --n-minibatches 4 --n-epochs 4 --clip-range 0.1) ;;
  *) echo "unknown rung $rung (R0..R4)" >&2; exit 2 ;;
esac
mkdir -p "$dir"
common=(--env "$game" --backend ram --regime one-step)
# a single run's flags: the sweep's M becomes the minibatch size of the run's rollout (16 envs x 5 steps)
run_ladder=("${ladder[@]/--n-minibatches/--minibatch-size}")
for i in "${!run_ladder[@]}"; do
  if [[ "${run_ladder[$i]}" == "--minibatch-size" ]]; then run_ladder[i+1]=$((16 * 5 / ladder[i+1])); fi
done

train_once() {  # train_once DIR FLAGS...: run to the end, resuming an unfinished run
  local out="$1"; shift
  if [[ -f "$out/summary.json" ]]; then return; fi
  if [[ -f "$out/config.json" ]]; then rl-gns train --resume "$out" --torch-threads 1; else
    rl-gns train "$@" --out "$out" --torch-threads 1; fi
}

# 1. null run: the policy fixed at its start (learning rate 0), 300,000 agent steps at 16 envs
train_once "$dir/null" "${common[@]}" "${run_ladder[@]}" --n-envs 16 --learning-rate 0 --total-steps "$null_steps" --no-gns &
null_run=$!
# 2. pilot: the regime's default learning rate at 16 envs, 1,000,000 agent steps
train_once "$dir/pilot" "${common[@]}" "${run_ladder[@]}" --n-envs 16 --total-steps "$pilot_steps" &
pilot_run=$!
trap 'kill "$null_run" "$pilot_run" 2>/dev/null || true' EXIT  # one failed (bad input: status 2): stop the other
wait "$null_run"
wait "$pilot_run"
trap - EXIT

# 3. targets at a 1 % null-crossing rate, counting every look of a 500,000-step run and the 3 learning rates
rl-gns targets "$dir/null" "$dir/pilot" --budget-steps "$budget" --learning-rates 3 --out "$dir/targets.json"
mapfile -t targets < <(python -c "import json, sys; print(*json.load(open(sys.argv[1]))['targets'], sep='\n')" "$dir/targets.json")
if [[ ${#targets[@]} -eq 0 ]]; then echo "$game $rung: no target above the null floor; v8 replaces the game" >&2; exit 3; fi

# 4. the sweep: n_envs 8..256 at n_steps 5, 3 learning rates around 7e-4 (rollout / 80)^0.5, 3 seeds, to the top target;
#    then v8's edge rule, at most twice: a rate beyond an edge that a majority of seeds kept, for every seed
rl-gns sweep "${common[@]}" "${ladder[@]}" --n-envs "${sizes[@]}" --seeds "$seeds" --budget-steps "$budget" \
  --targets "${targets[@]}" --edge-rounds 2 --engine population --workers 2 --threads-per-run 1 --out "$dir/sweep"

# 5. p_null of the same targets again, with L the most learning rates any size tried in the end
rates="$(python -c "import json, sys; s = json.load(open(sys.argv[1])); added = [tuple(e[:2]) for e in s.get('edge_learning_rates', [])]; print(s['lr_points'] + max([added.count(k) for k in added], default=0))" "$dir/sweep/sweep.json")"
rl-gns targets "$dir/null" "$dir/pilot" --budget-steps "$budget" --learning-rates "$rates" --given "${targets[@]}" \
  --out "$dir/targets_realised.json"

# 6. the fit and the noise-scale candidates
rl-gns analyze "$dir/sweep"

# 7. Table 1 and criterion v8's table over every game of this rung analysed so far
analysed=()
for game_dir in "$table1"/*/"$rung"; do
  if [[ -f "$game_dir/sweep/results.json" && -f "$game_dir/targets.json" ]]; then analysed+=("$game_dir"); fi
done
rl-gns table "${analysed[@]}" --out "$table1/table_$rung.md"

# 8. every rung of every game analysed so far: Table 1 over all, the ladder over the games at two rungs or more
every=()
for game_dir in "$table1"/*/R[0-4]; do
  if [[ -f "$game_dir/sweep/results.json" && -f "$game_dir/targets.json" ]]; then every+=("$game_dir"); fi
done
rl-gns table "${every[@]}" --out "$table1/ladder.md" > /dev/null
