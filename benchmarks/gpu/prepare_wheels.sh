#!/usr/bin/env bash
# Run here (network to the package registries), before a GPU session: the wheels the lent GPU machine lacks,
# for its Python 3.12 on x86-64, into .whl/ at the repository root (git-ignored through .git/info/exclude),
# plus rl-gns itself built from this checkout. The machine's image already holds torch, numpy, scipy, pandas,
# matplotlib, tensorboard, tqdm, rich, cloudpickle and statsmodels (/work/.library/device/KINDS.md).
# Also, into .carry/ (git-ignored too): the pixel Beam Rider trunk to go on with (session.sh trunk), the newest one under
# results/gpu/ (its 2.75M snapshot) or TRUNK; and, with PROBES=1, the RAM probes' protocol scripts and trunks (session.sh probes) under
# .carry/results/. A device command carries at most 64 MiB: the trunk with its snapshot takes about 46 MiB, the RAM
# probes' files about 18 MiB, so carry one or the other.
# Then every device command carries .whl and .carry and runs: bash benchmarks/gpu/session.sh <stage>
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
exclude="$(git rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$exclude")"
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"
rm -rf .whl && mkdir -p .whl
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" -d .whl \
  ale-py==0.12.1 gymnasium==1.4.0 farama-notifications==0.0.6 stable-baselines3==2.9.2 \
  tyro==1.0.17 docstring-parser==0.18.0 typeguard==4.6.0 typing-extensions==4.16.0 arch==7.2.0
# pure-Python wheels built here: rliable 1.2 is published as a source distribution only, and rl-gns itself
python3 -m pip wheel -q --no-deps -w .whl rliable==1.2.0 .
du -sh .whl && ls .whl
grep -qx '/.carry/' "$exclude" || echo '/.carry/' >> "$exclude"
# The pixel trunks' model files (23 MB each) are kept in the repository's history, not in its tree (results/README.md):
# the trunk is taken whole from the last commit that held them.
models_commit=949a211b97f63a40433b01fd8f090856633c09f6
trunk="${TRUNK:-results/gpu/h200_2026-11-26/beamrider_trunk}"
trunk="${trunk%/}"
rm -rf .carry && mkdir -p .carry/beamrider_trunk
git archive "$models_commit" "$trunk" | tar -x -C .carry/beamrider_trunk --strip-components="$(awk -F/ '{print NF}' <<<"$trunk")"
if [ "${PROBES:-0}" = 1 ]; then
  git ls-files -z results/probes/trunks results/probes/trunks.sh results/probes_v4/protocol.sh results/probes_v5/protocol.sh \
    | xargs -0 cp --parents -t .carry/
fi
du -sh .carry
