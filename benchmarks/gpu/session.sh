#!/usr/bin/env bash
# Drives a lent GPU machine, one stage per device command (each ends well inside the 10-minute limit):
#
#   bash benchmarks/gpu/session.sh check   # GPU losses, gradients and noise-scale norms against the CPU reference
#   bash benchmarks/gpu/session.sh speed   # throughput matrix: plain SB3 vs rl-gns (off, default, all), n_envs 8-256
#   bash benchmarks/gpu/session.sh ceiling # the emulator ceiling: envs alone with random actions
#   bash benchmarks/gpu/session.sh sweep   # one slice of the pixel Beam Rider sweep; rerun to go on
#   bash benchmarks/gpu/session.sh ranks   # data-parallel ranks (--nproc 1,2,4, gloo) on the machine's CPU cores
#   bash benchmarks/gpu/session.sh population # pixel agents one at a time against one population sharing the GPU
#
# On the device: carry .whl (benchmarks/gpu/prepare_wheels.sh makes it here) and run from the repository root;
# results go to $OUT (what comes back): JSON records, logs, and the sweep's small files as one tarball. The sweep
# lives in $SWEEP_DIR, outside the repository, so that a warm machine keeps its checkpoints between commands; a
# bare machine starts it from the finished runs committed under results/gpu/ (rerunning skips them).
#
# CPU dry run (tests/test_gpu_session.py): DEVICE=cpu TINY=1 OUT=... SWEEP_DIR=... bash benchmarks/gpu/session.sh <stage>
set -euo pipefail
stage="${1:?usage: session.sh check|speed|ceiling|sweep|ranks|population}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
DEVICE="${DEVICE:-cuda}"
TINY="${TINY:-0}"
OUT="${OUT:?set OUT to the folder whose files come back}"
SWEEP_DIR="${SWEEP_DIR:-/tmp/rl_gns_gpu/beamrider_pixels}"
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

case "$stage" in
  check)
    n_envs=$([ "$TINY" = 1 ] && echo 2 || echo 8)
    python3 benchmarks/gpu/check_device.py --device "$DEVICE" --n-envs "$n_envs" --out "$OUT/check.json" 2>&1 | tee "$OUT/check.log"
    ;;
  speed)
    # SIZES, N_CHUNKS and CHUNK_ITERATIONS fit the matrix to the time a command has
    if [ "$TINY" = 1 ]; then sizes=(2); chunks=(--n-chunks 1 --chunk-iterations 1)
    else read -ra sizes <<<"${SIZES:-8 32 128 256}"; chunks=(--n-chunks "${N_CHUNKS:-3}" --chunk-iterations "${CHUNK_ITERATIONS:-4}"); fi
    python3 benchmarks/speed.py --device "$DEVICE" --n-envs "${sizes[@]}" "${chunks[@]}" --out "$OUT/speed.json" 2>&1 | tee "$OUT/speed.log"
    python3 benchmarks/speed_table.py "$OUT/speed.json" | tee "$OUT/speed.md"
    ;;
  ceiling)
    # the emulator ceiling: the envs alone with random actions (ale-py's vector env on every core; SB3's stack on one)
    if [ "$TINY" = 1 ]; then settings=(--n-envs 2 --seconds 1); else settings=(--n-envs 16 64 256 --seconds 10); fi
    python3 benchmarks/emulator_ceiling.py "${settings[@]}" --backends ale_vector sb3 --out "$OUT/ceiling.json" 2>&1 | tee "$OUT/ceiling.log"
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
    python3 -m rl_gns sweep --env BeamRider "${settings[@]}" --n-minibatches 4 --lr-ref 2.5e-4 --n-envs-ref 8 \
      --device "$DEVICE" --checkpoint-minutes 2 --max-wall-minutes "$MINUTES" --out "$SWEEP_DIR" 2>&1 | tee "$OUT/sweep.log"
    # the small files of every run (settings, logs, summaries; no models, events or checkpoints) in one tarball
    (cd "$SWEEP_DIR" && find . \( -name '*.json' -o -name '*.csv' -o -name 'log.txt' -o -name 'error.txt' \) \
       -not -path '*/checkpoints/*' -print0 | tar --null -czf "$OUT/sweep_files.tar.gz" -T -)
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
      read -ra sizes <<<"${SIZES:-8 32 128}"
      settings=(--n-envs "${sizes[@]}" --seeds 2 --agent-steps 4096 --torch-threads 4)
    fi
    python3 benchmarks/population_speed.py --backend ale_vector --device "$DEVICE" "${settings[@]}" \
      --out "$OUT/population.json" 2>&1 | tee "$OUT/population.log"
    ;;
  *)
    echo "unknown stage $stage: use check, speed, ceiling, sweep, ranks or population" >&2
    exit 2
    ;;
esac
