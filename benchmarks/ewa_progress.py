"""Does a progress measure of evaluation games of an exponentially weighted average (EWA) of the weights pay? Exploratory.

A probe times a branch by the first time its progress measure reaches a target that a run which learns nothing reaches
with probability at most 1 % (the null floor, counting every look and every learning rate). Today's measure is the
running score of the last 20 training games, looked at after every game. This compares, on runs that kept their agent
every few thousand agent steps (``rl-gns train --snapshot-steps``), four measures looked at every ``--eval-every`` agent
steps or after every game:

==============  ======================================================================================================
``running``     the running score of the last 20 training games after every game (today's measure; free)
``running@K``   the same running score looked at only every ``--eval-every`` agent steps (free)
``current``     the mean of ``--eval-games`` evaluation games of the agent at that step (costs their agent steps)
``ewa<h>``      the same games of the EWA of the kept agents, ``θ̄_t ∝ Σ_k exp(−(t − t_k)/h) θ_k`` over the snapshots
                ``t_k ≤ t``, time constant ``h`` agent steps (costs their agent steps)
==============  ======================================================================================================

Each measure's null floor comes from the null run's games (learning rate 0: every game of fixed parameters is an
independent draw, and an evaluation of fixed parameters plays the same distribution): the highest value a run that
learns nothing shows over its looks, resampled. Then, per run and target, the agent steps at which each measure first
reaches it, and its cost: those steps plus the evaluation games' agent steps spent until then. Evaluation games never
touch the run (they are played afterwards from its snapshots), so measuring cannot change what is measured.

    rl-gns train --env Breakout --backend ram --regime one-step --n-envs 16 --total-steps 500000 \\
        --snapshot-steps 5000 --no-gns --seed 0 --out runs/ewa/s0          # and --seed 1 ...
    python benchmarks/ewa_progress.py runs/ewa/s0 runs/ewa/s1 --null results/table1/Breakout/R0/null \\
        --targets 4.95 7.55 --out results/validation/ewa_progress
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
import tyro
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import VecEnv

from rl_gns import NoiseScalePPO, make_atari_vec_env
from rl_gns.core.maths.targets import first_reached, null_floor, null_max_running_scores, running_score
from rl_gns.records.rundir import RunDir, snapshots

#: Games in the running score (the probe's window).
WINDOW = 20


@dataclass
class Args:
    """Compare progress measures of runs that kept snapshots: their null floors and when each reaches given targets."""

    runs: tyro.conf.Positional[list[Path]]
    """Finished runs of one game and recipe, each with snapshots (``rl-gns train --snapshot-steps``)."""
    null: Path
    """The same recipe's run at learning rate 0 (its games are the null distribution)."""
    targets: list[float]
    """Scores to reach (raw game score)."""
    eval_every: int = 25_000
    """Agent steps between two looks of the periodic measures (a multiple of the runs' snapshot spacing)."""
    eval_games: int = 20
    """Evaluation games per look, one per env."""
    until: int | None = None
    """Agent steps of the last look (default: the last snapshot)."""
    horizons: list[int] = field(default_factory=lambda: [10_000, 25_000, 50_000])
    """EWA time constants ``h``, agent steps."""
    learning_rates: int = 3
    """Runs tried per kept run (the learning rates of a size and seed), counted in every null floor."""
    level: float = 0.01
    """The largest false-crossing probability a target may have."""
    draws: int = 20_000
    """Resampled null runs per floor."""
    max_game_steps: int = 27_000
    """Agent steps after which an evaluation game is cut and left out (ALE's 108,000 frames)."""
    seed: int = 0
    """Seed of the evaluation envs, the policy's sampling during evaluation, and the resampling."""
    out: Path | None = None
    """Directory for ewa_progress.md and ewa_progress.json (default: print only)."""


def ewa_weights(snapshot_steps_K: np.ndarray, at: int, horizon: float) -> np.ndarray:
    """``(K,)`` the EWA's weights of the snapshots at ``at`` agent steps: ``w_k ∝ exp(−(at − t_k)/h)`` for
    ``t_k <= at``, 0 after, summing to 1: the EWA ``θ̄ ← β θ̄ + (1 − β) θ`` of snapshots ``Δ`` agent steps apart,
    ``β = exp(−Δ/h)``, corrected for its start as Adam corrects its moments (divided by ``1 − β^n``).

    :param snapshot_steps_K: ``(K,)`` agent steps of the snapshots, ascending.
    :param at: agent steps of the look.
    :param horizon: ``h``, agent steps.
    """
    steps = np.asarray(snapshot_steps_K, dtype=float)
    kept = steps <= at
    if not kept.any():
        raise ValueError(f"no snapshot at or before {at} agent steps")
    w = np.where(kept, np.exp(-(at - np.minimum(steps, at)) / horizon), 0.0)
    return w / w.sum()


def null_max_eval_means(null_scores_N: np.ndarray, games: int, looks: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``(draws,)`` the highest mean of ``games`` fresh games over ``looks`` looks of a run that learns nothing, each
    game resampled with replacement from ``null_scores_N`` (looks of disjoint games are independent)."""
    scores = np.asarray(null_scores_N, dtype=float)
    out = np.empty(draws)
    for start in range(0, draws, 512):
        n = min(512, draws - start)
        out[start : start + n] = scores[rng.integers(0, len(scores), size=(n, looks, games))].mean(axis=2).max(axis=1)
    return out


def policy_state(path: Path) -> dict[str, torch.Tensor]:
    """The policy's state dict of a saved agent."""
    _, params, _ = load_from_zip_file(str(path), device="cpu", print_system_info=False)
    assert params is not None, f"{path} holds no parameters"
    return dict(params["policy"])


def averaged_state(states_K: list[dict[str, torch.Tensor]], weights_K: np.ndarray) -> dict[str, torch.Tensor]:
    """``Σ_k w_k state_k`` over the floating tensors of the policy states; any other entry from the last state with a
    weight."""
    used = [(state, float(w)) for state, w in zip(states_K, weights_K, strict=True) if w > 0]
    last = used[-1][0]
    return {
        key: sum((w * state[key] for state, w in used), torch.zeros_like(tensor)) if tensor.is_floating_point() else tensor
        for key, tensor in last.items()
    }


def play(model: NoiseScalePPO, env: VecEnv, seed: int, max_game_steps: int) -> tuple[list[float], int]:
    """``(scores, agent steps)``: the first game of each of ``env``'s envs with the model's policy (its actions
    sampled), reproducible from ``seed``; a game cut at ``max_game_steps`` is left out of the scores."""
    games = env.num_envs
    env.seed(seed)
    torch.manual_seed(seed)
    obs = env.reset()
    scores: list[float | None] = [None] * games
    done_envs = np.zeros(games, dtype=bool)
    steps = 0
    for _ in range(max_game_steps):
        actions, _ = model.predict(obs, deterministic=False)  # type: ignore[arg-type]
        obs, _, _, infos = env.step(actions)
        steps += int((~done_envs).sum())
        for i, info in enumerate(infos):
            if not done_envs[i] and "episode" in info:
                scores[i], done_envs[i] = float(info["episode"]["r"]), True
        if done_envs.all():
            break
    return [s for s in scores if s is not None], steps


def first_look(looks_steps_T: np.ndarray, values_T: np.ndarray, target: float) -> float:
    """Agent steps of the first look whose value reaches ``target``; NaN if none does."""
    reached = np.flatnonzero(np.asarray(values_T) >= target)
    return float(looks_steps_T[reached[0]]) if len(reached) else math.nan


def measures_of(run: Path, args: Args) -> dict[str, dict]:
    """Every measure's looks on one run: ``{name: {"steps": [...], "values": [...], "eval_steps": [...]}}``; the
    running score's looks are its games."""
    config, episodes = RunDir(run).config(), RunDir(run).episodes()
    kept = snapshots(run)
    steps_K = np.array(sorted(kept))
    states = [policy_state(kept[s]) for s in steps_K]
    marks = range(args.eval_every, min(int(steps_K[-1]), args.until or int(steps_K[-1])) + 1, args.eval_every)
    looks = [int(steps_K[np.searchsorted(steps_K, mark)]) for mark in marks]  # the first snapshot at or after each mark
    played = episodes["env_steps"] <= looks[-1]  # the games up to the last look, as many looks as the floor counts
    running = running_score(episodes["score"], WINDOW)
    out: dict[str, dict] = {
        "running": {
            "steps": episodes["env_steps"][played].tolist(),
            "values": np.nan_to_num(running[played], nan=-np.inf).tolist(),
            "scores": episodes["score"][played].tolist(),
        },
        f"running@{args.eval_every // 1000}k": {"steps": looks, "values": []},
    }
    for at in looks:
        games_before = int(np.searchsorted(episodes["env_steps"], at, side="right"))
        out[f"running@{args.eval_every // 1000}k"]["values"].append(
            float(running[games_before - 1]) if games_before >= WINDOW else -math.inf
        )
    model = NoiseScalePPO.load(str(kept[steps_K[-1]]), device="cpu")
    env = make_atari_vec_env(config.settings["env"], n_envs=args.eval_games, seed=args.seed, backend="ram")
    policies = {"current": None, **{f"ewa{h // 1000}k": h for h in args.horizons}}
    for name, horizon in policies.items():
        values, spent = [], []
        for i, at in enumerate(looks):
            w = ewa_weights(steps_K, at, horizon) if horizon else (steps_K == at) * 1.0
            model.policy.load_state_dict(averaged_state(states, w))
            scores, steps = play(model, env, args.seed + 1000 * i, args.max_game_steps)
            values.append(float(np.mean(scores)) if scores else -math.inf)
            spent.append(steps)
        out[name] = {"steps": looks, "values": values, "eval_steps": spent}
        print(f"{run} {name}: " + " ".join(f"{v:.2f}" for v in values), file=sys.stderr, flush=True)
    env.close()
    return out


def null_floors(names: list[str], null_scores_N: np.ndarray, games_per_run: int, n_looks: int, args: Args) -> dict:
    """Each measure's null floor (the module's docstring): the running score over every game of the longest run; a
    periodic look of 20 training games or of ``--eval-games`` evaluation games over ``n_looks`` looks."""
    rng = np.random.default_rng(args.seed)
    every_game = null_max_running_scores(null_scores_N, games_per_run, WINDOW, args.draws, rng)
    periodic = null_max_eval_means(null_scores_N, WINDOW, n_looks, args.draws, rng)
    evaluated = null_max_eval_means(null_scores_N, args.eval_games, n_looks, args.draws, rng)
    kinds = {"running": every_game, "periodic": periodic, "evaluated": evaluated}
    kind = {
        name: "running" if name == "running" else "periodic" if name.startswith("running@") else "evaluated" for name in names
    }
    return {name: null_floor(kinds[kind[name]], args.learning_rates, args.level) for name in names}


def reach_rows(run: Path, measures: dict[str, dict], floors: dict[str, float], targets: list[float]) -> list[dict]:
    """Per measure and target of one run: the agent steps of its first look at or above the target, and its cost
    (those steps and the evaluation games' agent steps spent until then); NaN where it never reaches it."""
    rows = []
    for name, m in measures.items():
        steps_T, values_T = np.array(m["steps"], dtype=float), np.array(m["values"], dtype=float)
        spent_T = np.cumsum(m.get("eval_steps", np.zeros(len(steps_T))))
        for target in targets:
            if name == "running":
                at = first_reached(steps_T, np.array(m["scores"]), target, WINDOW)
                reached = math.nan if at is None else float(steps_T[at])
            else:
                reached = first_look(steps_T, values_T, target)
            cost = reached if math.isnan(reached) else reached + float(spent_T[int(np.searchsorted(steps_T, reached))])
            rows.append({"run": str(run), "measure": name, "target": target, "floor": floors[name],
                         "reached": reached, "cost": cost, "best": float(np.max(values_T))})  # fmt: skip
    return rows


def check(args: Args) -> None:
    """Refuse bad input in one line (exit status 2) before anything is read or played."""
    counts = {"--eval-every": args.eval_every, "--eval-games": args.eval_games, "--learning-rates": args.learning_rates,
              "--draws": args.draws, "--max-game-steps": args.max_game_steps}  # fmt: skip
    bad = [f"{flag} must be a positive integer, got {value}" for flag, value in counts.items() if value < 1]
    bad += [f"--horizons must be positive, got {h}" for h in args.horizons if not h > 0]
    bad += [] if 0 < args.level < 1 else [f"--level must lie in (0, 1), got {args.level}"]
    bad += [] if args.targets and all(map(math.isfinite, args.targets)) else ["--targets must be finite numbers"]
    bad += [f"{run}: no snapshots (rl-gns train --snapshot-steps)" for run in args.runs if not snapshots(run)]
    if bad:
        print(f"ewa_progress.py: error: {bad[0]}", file=sys.stderr)
        raise SystemExit(2)


def main(args: Args) -> None:
    check(args)
    null_scores = RunDir(args.null).episodes()["score"]
    per_run = {run: measures_of(run, args) for run in args.runs}
    names = list(next(iter(per_run.values())))
    n_looks = len(next(iter(per_run.values()))["current"]["steps"])
    games_per_run = max(len(m["running"]["steps"]) for m in per_run.values())
    floors = null_floors(names, null_scores, games_per_run, n_looks, args)
    rows = [row for run, measures in per_run.items() for row in reach_rows(run, measures, floors, args.targets)]
    lines = [
        "## Progress measures against the null floor (exploratory)",
        "",
        f"Null run `{args.null}` ({len(null_scores)} games, mean {np.mean(null_scores):.3g}); floors at level "
        f"{args.level:g} over {args.learning_rates} learning rates; looks every {args.eval_every:,} agent steps "
        f"({n_looks} looks), {args.eval_games} evaluation games per look. Cost: agent steps trained plus evaluation "
        "games' agent steps until the target is reached.",
        "",
        "| run | measure | null floor | best | " + " | ".join(f"agent steps to {t:g} (cost)" for t in args.targets) + " |",
        "|---|---|---|---|" + "---|" * len(args.targets),
    ]
    for run in per_run:
        for name in names:
            cells = [r for r in rows if r["run"] == str(run) and r["measure"] == name]
            shown = ["–" if math.isnan(r["reached"]) else f"{r['reached']:,.0f} ({r['cost']:,.0f})" for r in cells]
            lines.append(f"| {run.name} | {name} | {floors[name]:.3g} | {cells[0]['best']:.3g} | " + " | ".join(shown) + " |")
    lines += ["", f"`{shlex.join(['python', *sys.argv])}`, {datetime.now(UTC):%Y-%m-%d}."]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ewa_progress.md").write_text(text + "\n")
        record = {"floors": floors, "rows": rows, "measures": {str(k): v for k, v in per_run.items()}}
        (args.out / "ewa_progress.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
