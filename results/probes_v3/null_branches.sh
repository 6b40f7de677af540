#!/usr/bin/env bash
# Branches with learning rate 0 (parameters fixed) from the Seaquest trunk at 100,096 agent steps, at 128 and 32 envs
# (n_steps 32, as the v3 probe's largest sizes), stopping at that probe's target: how far the 20-game running score
# climbs without any learning, as the first games finish in order of length (docs/prediction-criterion-v4.md).
# Then each one's running score after every game: results/probes_v3/Seaquest/null/running_scores.csv.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/probes_v3/Seaquest/null
target=$(python -c "import json; print(json.load(open('results/probes_v3/Seaquest/at100k/probe.json'))['target'])")
for n in 128 32; do
  [ -f "$out/n$n/summary.json" ] || rl-gns train --env Seaquest --backend ram --n-envs "$n" --n-steps 32 \
    --minibatch-size $((n * 8)) --n-epochs 4 --clip-range 0.1 --learning-rate 0 --no-anneal \
    --init-from results/probes/trunks/Seaquest/snapshots/000000100096.zip --stop-score "$target" \
    --total-steps $((n * 32 * 80)) --no-gns --seed 0 --torch-threads 1 --progress-bar False --out "$out/n$n"
done
python - "$out" "$target" <<'PY'
import csv, sys
from pathlib import Path
import numpy as np
out, target = Path(sys.argv[1]), float(sys.argv[2])
with (out / "running_scores.csv").open("w", newline="") as file:
    writer = csv.writer(file)
    writer.writerow(["n_envs", "game", "iteration", "running_score_20"])
    for n in (128, 32):
        rows = list(csv.DictReader((out / f"n{n}" / "episodes.csv").open()))
        scores = np.array([float(r["score"]) for r in rows])
        ends = np.array([int(r["env_steps"]) for r in rows])
        running = np.convolve(scores, np.ones(20) / 20, "valid")
        for i, value in enumerate(running):
            writer.writerow([n, i + 20, round(ends[i + 19] / (n * 32), 2), round(float(value), 2)])
        best = int(running.argmax())
        print(f"{n} envs, learning rate 0: running score from {running[0]:.1f} to at most {running[best]:.1f} "
              f"(iteration {ends[best + 19] / (n * 32):.1f}); target {target:.1f}; {len(scores)} games")
PY
