#!/usr/bin/env bash
# Drives a lent GPU machine, one stage per device command (each ends well inside the 10-minute limit):
#
#   bash benchmarks/gpu/session.sh check   # GPU losses, gradients and noise-scale norms against the CPU reference
#   bash benchmarks/gpu/session.sh speed   # throughput matrix: plain SB3 vs rl-gns (off, default, all), n_envs 16, 64
#   bash benchmarks/gpu/session.sh ceiling # the emulator ceiling: envs alone with random actions
#   bash benchmarks/gpu/session.sh concurrent # 4 and 8 training processes at once: plain SB3 against rl-gns
#   bash benchmarks/gpu/session.sh population # pixel agents one at a time against one population sharing the GPU
#   bash benchmarks/gpu/session.sh trunk   # the pixel Beam Rider trunk, MINUTES more of it; rerun to go on
#   GAME=SpaceInvaders STAGE=150000 bash benchmarks/gpu/session.sh probes # a RAM probe of criterion v5 on every core
#   bash benchmarks/gpu/session.sh trunk_probe # rl-gns probe of the pixel trunk at a snapshot (or its checkpoint)
#   bash benchmarks/gpu/session.sh sweep   # one slice of the pixel Beam Rider sweep; rerun to go on
#   bash benchmarks/gpu/session.sh ranks   # data-parallel ranks (--nproc 1,2,4, gloo) on the machine's CPU cores
#
# On the device: carry .whl and .carry (benchmarks/gpu/prepare_wheels.sh makes both here) and run from the repository
# root. A device command carries at most 64 MiB of working tree, and results/ alone is larger: move it out of the
# checkout for the device commands (mv results ../results_aside; mv ../results_aside results after). Each stage fits
# one 10-minute command on one H100 with 16 cores (timed 2026-11-24; the times below). Results go to $OUT (what comes
# back, at most 8 files of 16 MiB): JSON records, logs, and small files as tarballs. The sweep and the trunk live
# outside the repository ($SWEEP_DIR, $TRUNK_DIR, $PROBES_DIR, $TRUNK_PROBES_DIR), so that a warm machine keeps their checkpoints between commands;
# a bare machine starts the sweep from the finished runs committed under results/gpu/ and the trunk from the copy in
# .carry/beamrider_trunk.
#
# CPU dry run (tests/test_gpu_session.py): DEVICE=cpu TINY=1 OUT=... SWEEP_DIR=... bash benchmarks/gpu/session.sh <stage>
set -euo pipefail
stage="${1:?usage: session.sh check|speed|ceiling|concurrent|population|trunk|trunk_probe|probes|sweep|ranks}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
DEVICE="${DEVICE:-cuda}"
TINY="${TINY:-0}"
OUT="${OUT:?set OUT to the folder whose files come back}"
SWEEP_DIR="${SWEEP_DIR:-/tmp/rl_gns_gpu/beamrider_pixels}"
TRUNK_DIR="${TRUNK_DIR:-/tmp/rl_gns_gpu/beamrider_trunk}"
PROBES_DIR="${PROBES_DIR:-/tmp/rl_gns_gpu/probes_v5}"
MINUTES="${MINUTES:-8}"  # a sweep slice's wall-clock budget, inside the 10-minute command limit
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"

# the carried wheels, where the machine lacks them (a bare GPU machine has torch but not ale-py, SB3 or rl-gns)
if ! python3 -c "import ale_py, stable_baselines3, gymnasium, tyro, rliable, rl_gns" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 - <<'EOF' | tee "$OUT/machine.txt"
import os, platform, torch
print(platform.platform(), "python", platform.python_version(), "torch", torch.__version__, "cores", os.cpu_count())
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
EOF

# a bare machine's trunk: the copy in .carry/beamrider_trunk (prepare_wheels.sh), where $TRUNK_DIR holds none yet
carried_trunk() {
  if [ ! -d "$TRUNK_DIR" ] && [ -d .carry/beamrider_trunk ]; then
    mkdir -p "$(dirname "$TRUNK_DIR")" && cp -r .carry/beamrider_trunk "$TRUNK_DIR"
  fi
}

# what a stage brings back, packed as the script exits: after its training command, and also after a failure or a
# timeout. A timeout's SIGTERM reaches the training command too, which stops with checkpoints; bash runs the TERM trap
# once that command has returned, so the files are packed only when they are whole. Leave the device command's own
# limit (timeout_s) half a minute past the timeout, for that last PPO iteration and the packing.
pack_on_exit() {  # $1: the stage's packing function
  trap "status=\$?; $1 || echo 'session.sh: packing failed' >&2; exit \$status" EXIT
  trap 'exit 143' TERM INT
}
# the training command's output, shown and kept in $1: a tee that outlives the timeout's SIGTERM, so that the command
# can still print while it stops (a write to a closed pipe would end it before its checkpoint)
log_to() { trap '' TERM INT; exec tee "$1"; }

case "$stage" in
  check)
    n_envs=$([ "$TINY" = 1 ] && echo 2 || echo 8)
    python3 benchmarks/gpu/check_device.py --device "$DEVICE" --n-envs "$n_envs" --out "$OUT/check.json" 2>&1 | tee "$OUT/check.log"
    ;;
  speed)
    # SIZES, N_CHUNKS and CHUNK_ITERATIONS fit the matrix to the time a command has: about 2.5 min at n_envs 16 and
    # 3 at 64 on the H100 (plain SB3 steps about 600 agent steps/s there, on one core)
    if [ "$TINY" = 1 ]; then sizes=(2); chunks=(--n-chunks 1 --chunk-iterations 1)
    else read -ra sizes <<<"${SIZES:-16 64}"; chunks=(--n-chunks "${N_CHUNKS:-3}" --chunk-iterations "${CHUNK_ITERATIONS:-2}"); fi
    python3 benchmarks/speed.py --device "$DEVICE" --n-envs "${sizes[@]}" "${chunks[@]}" --out "$OUT/speed.json" 2>&1 | tee "$OUT/speed.log"
    python3 benchmarks/speed_table.py "$OUT/speed.json" | tee "$OUT/speed.md"
    ;;
  ceiling)
    # the emulator ceiling: the envs alone with random actions (ale-py's vector env on every core; SB3's stack on one)
    # (256 envs did not finish inside 2 minutes: each env loads its ROM, about 0.1 s, before the clock starts)
    if [ "$TINY" = 1 ]; then settings=(--n-envs 2 --seconds 1); else settings=(--n-envs 16 64 128 --seconds 5); fi
    python3 benchmarks/emulator_ceiling.py "${settings[@]}" --backends ale_vector sb3 --out "$OUT/ceiling.json" 2>&1 | tee "$OUT/ceiling.log"
    ;;
  concurrent)
    # K processes (PROCESSES, default 8 16) of plain SB3 PPO, then of rl-gns (default measurement), n_envs 16 each,
    # cores / K threads each: 4 and 8 took about 2.5 min on the H100 (8 rl-gns processes: 7.2k agent steps/s)
    if [ "$TINY" = 1 ]; then settings=(--processes 2 --n-envs 2 --iterations 1)
    else read -ra processes <<<"${PROCESSES:-8 16}"; settings=(--processes "${processes[@]}" --n-envs 16 --iterations 6); fi
    python3 benchmarks/concurrent_runs.py --configs a_sb3 c_default "${settings[@]}" --device "$DEVICE" \
      --out "$OUT/concurrent_runs.json" 2>&1 | tee "$OUT/concurrent.log"
    ;;
  trunk)
    # the pixel Beam Rider trunk toward a running score of 1,000 (n_envs 64, rl-zoo3 settings, schedule of 10M agent
    # steps, noise scale measured; about 3,000 agent steps/s on the H100), MINUTES of training per command. Back come
    # its small files, and its last checkpoint and snapshot in parts of 16,000 KiB (cat trunk_state.tar.part* | tar x):
    # put them in .carry/beamrider_trunk for the next bare machine.
    if [ "$TINY" = 1 ]; then settings=(--n-envs 2 --n-steps 16 --minibatch-size 8 --total-steps 1000000 --snapshot-steps 32); minutes=0.2
    else settings=(--n-envs 64 --total-steps 10000000 --snapshot-steps 250000); minutes="$MINUTES"; fi
    [ "$TINY" = 1 ] || carried_trunk  # a dry run starts its own
    pack_trunk() {
      (cd "$TRUNK_DIR" && find . -maxdepth 1 \( -name '*.json' -o -name '*.csv' -o -name '*.csv.xz' -o -name '*.png' \) \
         -print0 | tar --null -czf "$OUT/trunk_files.tar.gz" -T -)
      # the state to go on from: the last checkpoint of an unfinished trunk, the final model.zip of a finished one
      state="$(cd "$TRUNK_DIR" && { find checkpoints -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort | tail -1 || true; })"
      [ -n "$state" ] || state=model.zip
      snapshot="$(cd "$TRUNK_DIR" && { find snapshots -name '*.zip' 2>/dev/null | sort | tail -1 || true; })"  # none before the first
      (cd "$TRUNK_DIR" && tar cf - "$state" ${snapshot:+"$snapshot"}) | split -b 16000K - "$OUT/trunk_state.tar.part"
    }
    pack_on_exit pack_trunk
    if [ -f "$TRUNK_DIR/config.json" ]; then
      python3 -m rl_gns train --resume "$TRUNK_DIR" --device "$DEVICE" --max-wall-minutes "$minutes" 2>&1 | log_to "$OUT/trunk.log"
    else
      python3 -m rl_gns train --env BeamRider "${settings[@]}" --device "$DEVICE" --seed 0 --checkpoint-minutes 2 \
        --max-wall-minutes "$minutes" --out "$TRUNK_DIR" 2>&1 | log_to "$OUT/trunk.log"
    fi
    ;;
  probes)
    # criterion v5's RAM probe of GAME at STAGE agent steps (results/probes_v5/protocol.sh, its settings unchanged) with
    # WORKERS populations at once (default: one per 2 cores; more workers may split a population in other halves, whose
    # members then train in batches of another size: equal up to float rounding), stopped with checkpoints after
    # MINUTES; rerun to go on.
    # A machine without results/ takes the protocol's scripts and trunks from .carry/results. Back comes the probe's
    # directory without its models and event files, as probe_files.tar.gz: unpack it into results/probes_v5/GAME/.
    # Seaquest's and Beam Rider's trunk snapshots, and Space Invaders' past 100k, are in the history (results/README.md)
    game="${GAME:?set GAME (SpaceInvaders, Seaquest or BeamRider)}"; at="${STAGE:?set STAGE (agent steps, e.g. 50000)}"
    [ -d results/probes_v4 ] || cp -r .carry/results .
    if ! command -v rl-gns >/dev/null; then  # the protocol calls rl-gns: this checkout's, through python3 -m
      mkdir -p /tmp/rl_gns_bin && printf '#!/bin/sh\nexec python3 -m rl_gns "$@"\n' > /tmp/rl_gns_bin/rl-gns
      chmod +x /tmp/rl_gns_bin/rl-gns && export PATH="/tmp/rl_gns_bin:$PATH"
    fi
    tiny=()
    if [ "$TINY" = 1 ]; then  # later flags win: a probe small enough for a CPU dry run
      tiny=(--n-envs 2 --n-steps-grid 16 32 --seeds 1 --lr-points 1 --anchor-steps 16384 --window 2 --budget-steps 2048)
    fi
    workers="${WORKERS:-$(( $(getconf _NPROCESSORS_ONLN) / 2 ))}"  # (nproc would obey OMP_NUM_THREADS)
    pack_probe() {
      (cd "$PROBES_DIR/$game" && tar --exclude='model.zip' --exclude='events.out.tfevents.*' --exclude='.lock' \
         -czf "$OUT/probe_files.tar.gz" "at$((at / 1000))k")
    }
    pack_on_exit pack_probe
    HERE="$PROBES_DIR" NO_TABLE=1 WORKERS="$(( workers > 0 ? workers : 1 ))" bash results/probes_v5/protocol.sh "$game" "$at" \
      --max-wall-minutes "$MINUTES" "${tiny[@]}" 2>&1 | log_to "$OUT/probes.log"
    ;;
  trunk_probe)
    # rl-gns probe of the pixel Beam Rider trunk (the trunk stage's run in $TRUNK_DIR) at its snapshot at or past STAGE
    # agent steps (default: its latest; a trunk without snapshots, such as .carry's copy of a trunk that kept only its
    # checkpoint, at its newest checkpoint), toward the mission's figure and probes late in training: 16 envs, one
    # rollout size per n_steps of GRID (default 8-256: 128 to 4,096), SEEDS (default 2) seeds from FIRST_SEED (default
    # 0; a retest starts past the seeds of the probe before) x LR_POINTS (default 2) learning rates a factor 2 apart,
    # BUDGET (default 200,000) agent steps per branch, an anchor of ANCHOR_STEPS (default 200,000: 20 games of the
    # source's 64 envs at a running score of 2,300), a ladder of two targets (3 and 6 standard errors), the population
    # engine on the GPU, WORKERS (default 4) populations at once, stopped with checkpoints after MINUTES; rerun to go on
    # while the machine is warm (a pixel branch's checkpoint, about 20 MB, is too large to bring back). Back come the
    # probe's small files as trunk_probe_files.tar.gz: unpack them into results/gpu/beamrider_probes/.
    [ "$TINY" = 1 ] || carried_trunk
    [ -f "$TRUNK_DIR/config.json" ] || { echo "no trunk in $TRUNK_DIR: run the trunk stage first" >&2; exit 2; }
    latest="$(find "$TRUNK_DIR/snapshots" -name '*.zip' 2>/dev/null | sort | tail -1 || true)"
    if [ -n "$latest" ]; then
      at="${STAGE:-$((10#$(basename "$latest" .zip)))}"; point=(--at "$at")
    else  # rl-gns probe without --at branches from the newest checkpoint, named by its agent steps
      [ -z "${STAGE:-}" ] || { echo "the trunk in $TRUNK_DIR keeps no snapshot: leave STAGE unset" >&2; exit 2; }
      checkpoint="$(find "$TRUNK_DIR/checkpoints" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort | tail -1 || true)"
      [ -n "$checkpoint" ] || { echo "the trunk in $TRUNK_DIR has no snapshot or checkpoint yet: run the trunk stage longer" >&2; exit 2; }
      at="$((10#$(basename "$checkpoint")))"; point=()
    fi
    read -ra grid <<<"${GRID:-8 16 32 64 128 256}"
    settings=(--n-envs 16 --n-steps-grid "${grid[@]}" --seeds "${SEEDS:-2}" --lr-points "${LR_POINTS:-2}"
              --budget-steps "${BUDGET:-200000}" --first-seed "${FIRST_SEED:-0}" --workers "${WORKERS:-4}" --threads-per-run 4
              --anchor-steps "${ANCHOR_STEPS:-200000}" --target-rule noise --design fixed --no-censored --max-cost None)
    if [ "$TINY" = 1 ]; then  # later flags win: a probe small enough for a CPU dry run
      settings+=(--n-envs 2 --n-steps-grid 16 32 --seeds 1 --lr-points 1 --anchor-steps 8192 --window 2 --budget-steps 1024
                 --workers 1 --threads-per-run 1)
    fi
    probe_dir="${TRUNK_PROBES_DIR:-/tmp/rl_gns_gpu/beamrider_probes}/at$((at / 1000))k"
    pack_trunk_probe() {
      (cd "$(dirname "$probe_dir")" && tar --exclude='model.zip' --exclude='events.out.tfevents.*' --exclude='.lock' \
         --exclude='checkpoints' -czf "$OUT/trunk_probe_files.tar.gz" "$(basename "$probe_dir")")
    }
    pack_on_exit pack_trunk_probe
    python3 -m rl_gns probe "$TRUNK_DIR" ${point[@]+"${point[@]}"} "${settings[@]}" --steps midpoint --delta-noise 3 6 \
      --engine population --device "$DEVICE" --checkpoint-minutes 2 --max-wall-minutes "$MINUTES" --out "$probe_dir" \
      2>&1 | log_to "$OUT/trunk_probe.log"
    ;;
  sweep)
    # n_envs 8-128 (16x) at n_steps 128, M = 4, 2 learning rates x 2 seeds, targets up to 1,000; 4 runs share the GPU
    if [ "$TINY" = 1 ]; then
      settings=(--n-envs 2,4 --n-steps 32 --seeds 1 --lr-points 1 --targets 1000 --budget-steps 512 --workers 2)
    else
      settings=(--n-envs 8,16,32,64,128 --n-steps 128 --seeds 2 --lr-points 2 --targets 600,800,1000 --budget-steps 2000000
                --workers 4 --threads-per-run 4)
    fi
    committed="results/gpu/beamrider_pixels"
    if [ -d "$committed" ] && [ ! -d "$SWEEP_DIR" ]; then mkdir -p "$SWEEP_DIR" && cp -r "$committed"/. "$SWEEP_DIR"/; fi
    pack_sweep() {  # the small files of every run (settings, logs, summaries; no models, events or checkpoints)
      (cd "$SWEEP_DIR" && find . \( -name '*.json' -o -name '*.csv' -o -name '*.csv.xz' -o -name 'log.txt' -o -name 'error.txt' \) \
         -not -path '*/checkpoints/*' -print0 | tar --null -czf "$OUT/sweep_files.tar.gz" -T -)
    }
    pack_on_exit pack_sweep
    python3 -m rl_gns sweep --env BeamRider "${settings[@]}" --n-minibatches 4 --lr-ref 2.5e-4 --n-envs-ref 8 \
      --device "$DEVICE" --checkpoint-minutes 2 --max-wall-minutes "$MINUTES" --out "$SWEEP_DIR" 2>&1 | log_to "$OUT/sweep.log"
    ;;
  ranks)
    # real D with more cores per rank than the project's 2-core VM: each rank gets n_envs / nproc envs and a share of
    # the cores; one GPU cannot hold two NCCL ranks, so the ranks run on the CPU (gloo)
    if [ "$TINY" = 1 ]; then
      settings=(--n-envs 1,2 --nproc 1,2 --n-steps 16 --iterations 1 --env-agent-steps 64)
    else
      settings=(--n-envs 8,16,32 --nproc 1,2,4)
    fi
    python3 -m rl_gns scaling --env BeamRider "${settings[@]}" --device cpu --devices 1,2,4 --out "$OUT/scaling_nproc" \
      2>&1 | grep -v torchelastic | tee "$OUT/ranks.log"
    ;;
  population)
    # 4 pixel agents (2 seeds x 2 learning rates) per env count, trained one at a time and as one population
    if [ "$TINY" = 1 ]; then
      settings=(--n-envs 2 --seeds 1 --agent-steps 128 --ceiling-seconds 1)
    else
      read -ra sizes <<<"${SIZES:-16 64}"
      # agents: 2 x SEEDS; AGENT_STEPS each per engine (8,192 timed the population for only 3.4 s on an H200)
      settings=(--n-envs "${sizes[@]}" --seeds "${SEEDS:-2}" --agent-steps "${AGENT_STEPS:-32768}" --torch-threads 8)
    fi
    python3 benchmarks/population_speed.py --backend ale_vector --device "$DEVICE" "${settings[@]}" \
      --out "$OUT/population.json" 2>&1 | tee "$OUT/population.log"
    ;;
  *)
    echo "unknown stage $stage: use check, speed, ceiling, concurrent, population, trunk, trunk_probe, probes, sweep or ranks" >&2
    exit 2
    ;;
esac
