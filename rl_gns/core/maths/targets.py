"""When does a run reach a target score?

The score measure, the same for every rollout size: the **mean raw game score of the last
``window`` finished games** (whole games, all lives, across all envs), evaluated each time a game
finishes. Its lag is ``window`` games, i.e. the same amount of experience at every ``n_envs``
(games finish at ``n_envs / game length`` per agent step), so it shifts ``E`` alike for all sizes.

Shape glossary: ``N`` finished games, in the order they finished.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

#: Games averaged by the score measure.
DEFAULT_WINDOW = 20


#: What a run's PPO iterations to a target count: ``passage``, the iteration whose game took the running score to the
#: target; ``midpoint``, the iteration that running score's games stand for (:func:`window_midpoint`); ``trend``, the
#: iteration where the least-squares line through every game's score up to then meets the target (:func:`trend_crossing`).
StepsMeasure = Literal["passage", "midpoint", "trend"]


def running_score(scores_N: np.ndarray, window: int = DEFAULT_WINDOW) -> np.ndarray:
    """``(N,)`` mean of the last ``window`` game scores after each game; NaN before ``window`` games."""
    scores_N = np.asarray(scores_N, dtype=float)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    out = np.full(len(scores_N), np.nan)
    if len(scores_N) >= window:
        cumulative = np.concatenate([[0.0], np.cumsum(scores_N)])
        out[window - 1 :] = (cumulative[window:] - cumulative[:-window]) / window
    return out


def first_reached(env_steps_N: np.ndarray, scores_N: np.ndarray, target: float, window: int = DEFAULT_WINDOW) -> int | None:
    """Index of the first game after which the running score (:func:`running_score`) is >= ``target``.

    :param env_steps_N: ``(N,)`` agent steps at which each game finished (non-decreasing).
    :param scores_N: ``(N,)`` raw game scores.
    :param target: score to reach.
    :param window: games averaged.
    :return: the game index, or ``None`` if the target is never reached (a censored run).
    """
    env_steps_N = np.asarray(env_steps_N)
    if env_steps_N.shape != np.shape(scores_N):
        raise ValueError("env_steps_N and scores_N must have the same shape")
    if np.any(np.diff(env_steps_N) < 0):
        raise ValueError("games must be given in the order they finished")
    reached = np.flatnonzero(running_score(scores_N, window) >= target)
    return int(reached[0]) if len(reached) else None


def game_midpoints(end_steps_N: np.ndarray, lengths_N: np.ndarray, n_envs: int) -> np.ndarray:
    """``(N,)`` the agent step each game stands for, its midpoint: ``t_mid,g = t_end,g − n_envs · ℓ_g / 2``, since a
    game of ``ℓ_g`` agent steps on one env ran while all ``n_envs`` envs together took ``n_envs · ℓ_g`` agent steps.

    :param end_steps_N: ``(N,)`` agent steps (all envs) at which each game finished.
    :param lengths_N: ``(N,)`` each game's length in agent steps of its env (frames / frame skip).
    :param n_envs: envs stepped together.
    """
    end_steps_N, lengths_N = np.asarray(end_steps_N, dtype=float), np.asarray(lengths_N, dtype=float)
    if end_steps_N.shape != lengths_N.shape or not len(end_steps_N):
        raise ValueError("end_steps_N and lengths_N must be non-empty and of one shape")
    return end_steps_N - n_envs * lengths_N / 2


def window_midpoint(end_steps_W: np.ndarray, lengths_W: np.ndarray, n_envs: int) -> float:
    """The agent step a running score stands for: the mean of its ``W`` games' midpoints (:func:`game_midpoints`),
    ``t_mid = (1 / W) Σ_g (t_end,g − n_envs · ℓ_g / 2)``. A running score reached at ``t_end`` judges games played
    over the agent steps before it: it lags the policy by about ``(W + n_envs) · ℓ / 2`` agent steps, the same at
    every rollout size of one env count.

    :param end_steps_W: ``(W,)`` agent steps (all envs) at which each game of the window finished.
    :param lengths_W: ``(W,)`` each game's length in agent steps of its env (frames / frame skip).
    :param n_envs: envs stepped together.
    """
    return float(np.mean(game_midpoints(end_steps_W, lengths_W, n_envs)))


def trend_crossing(midpoints_N: np.ndarray, scores_N: np.ndarray, target: float) -> float:
    """When a run's mean score met ``target``, read off a line through all its games rather than one window: the
    ordinary least-squares line of the scores against the games' midpoints, and where it meets the target,

        ŝ(t) = a + b·t  (least squares over the N games),    t* = (target − a) / b.

    The first passage of a running score is drawn early by noise, and the more so the more slowly the score rises
    per game, which a large rollout makes it do (each iteration plays more games); that biases ``B_crit`` upwards.
    A line through every game weighs the noise of the last window against all the games before it.

    :param midpoints_N: ``(N,)`` the games' midpoints (:func:`game_midpoints`), any unit of time.
    :param scores_N: ``(N,)`` their raw scores.
    :param target: the score to meet.
    :return: ``t*`` in the unit of ``midpoints_N``; ``inf`` where the line does not rise (``b <= 0``: the scores show
        no learning to time) or fewer than 3 games or one midpoint leave it undefined.
    """
    t, y = np.asarray(midpoints_N, dtype=float), np.asarray(scores_N, dtype=float)
    if t.shape != y.shape:
        raise ValueError("midpoints_N and scores_N must have the same shape")
    if len(t) < 3 or np.ptp(t) == 0:
        return math.inf
    t_centred = t - t.mean()
    slope = float(np.dot(t_centred, y - y.mean()) / np.dot(t_centred, t_centred))
    if not slope > 0:
        return math.inf
    return float(t.mean() + (target - y.mean()) / slope)


def resolvable_improvement(score_sd: float, window: int, n_noise: float) -> float:
    """The improvement of the running score that stands ``n_noise`` standard errors above its noise:
    ``Δ = n_noise · σ / √window``.

    The running score of a policy that plays games with score standard deviation ``σ`` is a mean of ``window``
    games, with standard error ``σ / √window``; an improvement of ``n_noise`` of them is reached by chance alone
    with probability about ``Φ(-n_noise)`` per window of new games (0.13 % at 3).

    :param score_sd: ``σ``, standard deviation of one game's raw score.
    :param window: games in the running score.
    :param n_noise: the improvement in standard errors.
    """
    if window < 1 or not score_sd >= 0 or not n_noise > 0:
        raise ValueError(f"need window >= 1, score_sd >= 0 and n_noise > 0, got {window}, {score_sd}, {n_noise}")
    return n_noise * score_sd / math.sqrt(window)


def score_gain(first_RW: list[np.ndarray], last_RW: list[np.ndarray], z: float = 1.96) -> tuple[float, float, float]:
    """Mean over runs of the gain of the last games' mean score over the first games', with a normal interval
    whose sampling unit is the game: ``Δ = (1/R) Σ_r (mean(last_r) − mean(first_r))``,
    ``se = √(Σ_r (s²(last_r)/n(last_r) + s²(first_r)/n(first_r))) / R``, interval ``Δ ± z · se``.

    The first games of a run are played by its initial, near-uniform policy, so an interval above 0 says that
    the runs play measurably better than random play under the same environment settings, whatever the count of
    runs (one run suffices).

    :param first_RW: per run, ``(W,)`` raw scores of its first games (``W ≥ 2``).
    :param last_RW: per run, ``(W,)`` raw scores of its last games, not overlapping its first games (``W ≥ 2``).
    :param z: interval half-width in standard errors (1.96: 95 %).
    :return: ``(Δ, low, high)``.
    """
    if not first_RW or len(first_RW) != len(last_RW) or min(len(x) for x in [*first_RW, *last_RW]) < 2:
        raise ValueError("need the first and last games (>= 2 each) of the same runs, at least one run")
    gains_R = [float(np.mean(last) - np.mean(first)) for first, last in zip(first_RW, last_RW, strict=True)]
    variance = sum(np.var(x, ddof=1) / len(x) for x in [*first_RW, *last_RW])
    gain, half = float(np.mean(gains_R)), z * math.sqrt(variance) / len(gains_R)
    return gain, gain - half, gain + half


def game_length(game_ends_N: np.ndarray, lengths_N: np.ndarray, at: int, games: int = 100) -> tuple[float, float] | None:
    """Agent steps per finished game just before agent step ``at``, and the games' coefficient of variation:
    ``L = (e_k − e_0) / k`` over the last ``k + 1`` (at most ``games + 1``) game ends ``e_0 < … < e_k ≤ at``, and
    ``cv = sd / mean`` of those games' lengths. Games end at rate ``1 / L`` per agent step whatever the env count,
    each env finishing one game every ``L`` of its own steps on average.

    :param game_ends_N: ``(N,)`` agent steps at which a run's games ended, ascending.
    :param lengths_N: ``(N,)`` the games' lengths, in any unit (frames); NaN where not recorded (``cv`` then 0).
    :param at: agent steps of the point of interest.
    :param games: most games the estimate spans.
    :return: ``(L, cv)``, ``L`` in agent steps, or ``None`` where fewer than 11 games ended by ``at`` (too few).
    """
    ends, lengths = np.asarray(game_ends_N, dtype=float), np.asarray(lengths_N, dtype=float)
    kept = ends <= at
    ends, lengths = ends[kept][-(games + 1) :], lengths[kept][-(games + 1) :]
    if len(ends) < 11 or ends[-1] == ends[0]:
        return None
    cv = float(np.std(lengths, ddof=1) / np.mean(lengths)) if np.all(np.isfinite(lengths) & (lengths > 0)) else 0.0
    return float((ends[-1] - ends[0]) / (len(ends) - 1)), cv


def expected_games(length: float, cv: float, agent_steps: int, n_envs: int) -> float:
    """About how many games ``n_envs`` envs finish in ``agent_steps`` agent steps from a reset, games lasting
    ``length`` agent steps on average with coefficient of variation ``cv``: the renewal count
    ``n_envs · max(0, T / L + (cv² − 1) / 2)``, ``T = agent_steps / n_envs`` (each env loses about half a game in
    progress at the end; exact on average for ``cv`` ≥ 0.3 from ``T ≈ L``).

    :param length: ``L``, agent steps of a game (:func:`game_length`).
    :param cv: the games' coefficient of variation (:func:`game_length`).
    :param agent_steps: agent steps over all envs.
    :param n_envs: envs playing at once.
    """
    return n_envs * max(0.0, agent_steps / n_envs / length + (cv**2 - 1) / 2)


def steps_and_experience(env_steps: int, rollout_size: int) -> tuple[int, int]:
    """``(S, E)`` for an event at agent step ``env_steps``: it happened in PPO iteration
    ``S = ceil(env_steps / rollout_size)``, and ``E = S · rollout_size`` (the tradeoff model's ``E = B·S``)."""
    iterations = -(-env_steps // rollout_size)
    return iterations, iterations * rollout_size


@dataclass(frozen=True)
class ReachSteps:
    """When a run's running score first reached a target, in PPO iterations by each :data:`StepsMeasure`.

    :param game: index of the game whose score took the running score to the target.
    :param iterations: ``S`` by ``passage``: the iteration that game finished in (:func:`steps_and_experience`).
    :param env_steps: ``E = S · rollout_size``, agent steps.
    :param midpoint_iterations: ``S`` by ``midpoint``: the reaching window's mean midpoint (:func:`window_midpoint`)
        over the rollout size.
    :param trend_iterations: ``S`` by ``trend``: :func:`trend_crossing` over the games up to ``game``, at the earliest
        the first game's midpoint, over the rollout size; ``inf`` where the line does not rise.
    """

    game: int
    iterations: int
    env_steps: int
    midpoint_iterations: float
    trend_iterations: float

    def steps(self, measure: StepsMeasure) -> float:
        """``S`` by ``measure``, PPO iterations."""
        return steps_by(measure, self.iterations, self.midpoint_iterations, self.trend_iterations)


def steps_by(measure: StepsMeasure, iterations: int, midpoint_iterations: float, trend_iterations: float) -> float:
    """``S`` of one reached target by ``measure`` (:data:`StepsMeasure`), from the three timings, PPO iterations:
    ``passage`` the iteration the reaching game finished in, ``midpoint`` the reaching window's mean midpoint, ``trend``
    where the line through the scores meets the target (``inf`` where it does not rise)."""
    if measure == "trend":
        return trend_iterations
    return midpoint_iterations if measure == "midpoint" else float(iterations)


def reach_steps(
    end_steps_N: np.ndarray,
    scores_N: np.ndarray,
    lengths_N: np.ndarray,
    n_envs: int,
    rollout_size: int,
    target: float,
    window: int = DEFAULT_WINDOW,
) -> ReachSteps | None:
    """When a run reached ``target`` (:func:`first_reached`), by every steps measure; ``None`` if it never did.

    :param end_steps_N: ``(N,)`` agent steps (all envs) at which each game finished, in the order they finished.
    :param scores_N: ``(N,)`` raw game scores.
    :param lengths_N: ``(N,)`` each game's length in agent steps of its env (frames / frame skip).
    :param n_envs: envs stepped together.
    :param rollout_size: agent steps per PPO iteration.
    :param target: the score to reach.
    :param window: games in the running score.
    """
    game = first_reached(end_steps_N, scores_N, target, window)
    if game is None:
        return None
    iterations, env_steps = steps_and_experience(int(end_steps_N[game]), rollout_size)
    reaching = slice(game - window + 1, game + 1)
    midpoint = window_midpoint(end_steps_N[reaching], lengths_N[reaching], n_envs)
    midpoints = game_midpoints(end_steps_N[: game + 1], lengths_N[: game + 1], n_envs)
    trend = max(trend_crossing(midpoints, np.asarray(scores_N)[: game + 1], target), float(midpoints[0]))
    return ReachSteps(game, iterations, env_steps, midpoint / rollout_size, trend / rollout_size)


def censored_by(measure: StepsMeasure, trained_iterations: float, last_midpoint_iterations: float) -> float:
    """A lower bound on ``S`` by ``measure`` for a run that trained ``trained_iterations`` PPO iterations without reaching
    its target (right-censored, :func:`~rl_gns.core.maths.tradeoff.fit_censored_tradeoff`): had a later game taken it
    there, ``passage`` would come after the iterations trained, and the reaching window would end after the run's last
    window of games, so ``midpoint`` after that window's mean midpoint (``last_midpoint_iterations``,
    :func:`window_midpoint` over the rollout size). ``trend`` takes the same bound as ``midpoint``: its line is drawn
    through the games up to the reaching window and meets the target near that window's midpoint, before or after it,
    so there the bound is approximate.

    :param measure: the steps measure.
    :param trained_iterations: PPO iterations the run trained.
    :param last_midpoint_iterations: its last running score's window midpoint, PPO iterations; NaN before ``window``
        games (then the bound is 0: none).
    """
    if measure == "passage":
        return float(trained_iterations)
    return 0.0 if math.isnan(last_midpoint_iterations) else float(last_midpoint_iterations)


def null_max_running_scores(
    null_scores_N: np.ndarray, n_games: int, window: int, draws: int, rng: np.random.Generator, chunk: int = 256
) -> np.ndarray:
    """``(draws,)`` the highest running score (:func:`running_score`) that a run which learns nothing reaches over
    ``n_games`` games, each draw a run of games resampled with replacement from ``null_scores_N``, games at fixed
    parameters being independent. Every look counts: the running score is looked at after each of its games.

    :param null_scores_N: ``(N,)`` raw scores of games played at fixed parameters (a learning-rate-0 run).
    :param n_games: games a run plays within its budget (at least ``window``).
    :param window: games in the running score.
    :param draws: resampled runs.
    :param rng: the resampling's generator.
    :param chunk: draws resampled at once (memory: ``chunk · n_games`` floats).
    """
    scores = np.asarray(null_scores_N, dtype=float)
    if len(scores) < window or n_games < window or draws < 1:
        raise ValueError(f"need at least window ({window}) null games and n_games, and draws >= 1")
    out = np.empty(draws)
    for start in range(0, draws, chunk):
        block = scores[rng.integers(0, len(scores), size=(min(chunk, draws - start), n_games))]  # (d, G)
        cumulative = np.concatenate([np.zeros((len(block), 1)), np.cumsum(block, axis=1)], axis=1)
        out[start : start + len(block)] = ((cumulative[:, window:] - cumulative[:, :-window]) / window).max(axis=1)
    return out


def null_max_running_scores_envs(
    null_scores_N: np.ndarray,
    null_lengths_N: np.ndarray,
    n_envs: int,
    agent_steps: int,
    window: int,
    draws: int,
    rng: np.random.Generator,
    chunk: int = 64,
) -> np.ndarray:
    """``(draws,)`` as :func:`null_max_running_scores`, for a run of ``n_envs`` envs that reset together: each env plays
    games resampled with replacement from the null games, score and length together, back to back from step 0, for
    ``H = agent_steps / n_envs`` of its own steps; the games that ended by ``H``, in the order they ended (ties by env),
    make the running score, looked at after each game. Where scores grow with length, the short games end first and the
    long ones after them, so the running score climbs with no learning (the first-games floor), which a resampling in
    any order does not see; with ``n_envs = 1`` and one length the two agree in distribution. A draw in which fewer
    than ``window`` games end is ``-inf`` (its running score is never looked at).

    :param null_scores_N: ``(N,)`` raw scores of games played at fixed parameters.
    :param null_lengths_N: ``(N,)`` their lengths, agent steps of their env (frames / frame skip), each > 0.
    :param n_envs: envs of the run.
    :param agent_steps: the run's agent steps over all envs.
    :param window: games in the running score.
    :param draws: resampled runs.
    :param rng: the resampling's generator.
    :param chunk: draws resampled at once (memory: ``chunk · n_envs`` times the games an env plays).
    """
    scores, lengths = np.asarray(null_scores_N, dtype=float), np.asarray(null_lengths_N, dtype=float)
    if scores.shape != lengths.shape or not len(scores) or min(window, draws, n_envs) < 1:
        raise ValueError("need null games' scores and lengths of one shape, and window, draws and n_envs >= 1")
    if not np.all(np.isfinite(lengths) & (lengths > 0)):
        raise ValueError("every null game needs a finite length > 0")
    horizon = agent_steps / n_envs
    per_env = math.ceil(horizon / lengths.min()) + 1  # enough games that every env plays past its horizon
    out = np.empty(draws)
    for start in range(0, draws, chunk):
        picks = rng.integers(0, len(scores), size=(min(chunk, draws - start), n_envs, per_env))  # (d, E, G)
        ends = np.cumsum(lengths[picks], axis=2).reshape(len(picks), -1)  # env-major: ties keep env order
        order = np.argsort(np.where(ends <= horizon, ends, np.inf), axis=1, kind="stable")
        ordered = np.take_along_axis(scores[picks].reshape(len(picks), -1), order, axis=1)  # (d, E·G)
        ended = (ends <= horizon).sum(axis=1)  # (d,)
        cumulative = np.concatenate([np.zeros((len(picks), 1)), np.cumsum(ordered, axis=1)], axis=1)
        running = (cumulative[:, window:] - cumulative[:, :-window]) / window  # the look after game window-1+j
        looked = np.arange(running.shape[1])[None, :] < (ended - window + 1)[:, None]
        out[start : start + len(picks)] = np.where(looked, running, -np.inf).max(axis=1)
    return out


def null_crossing(max_scores_D: np.ndarray, target: float, n_runs: int) -> float:
    """``p_null(T) = 1 − (1 − P(M ≥ T))^L``: the chance that the best of ``L = n_runs`` independent runs that learn
    nothing reaches ``target`` somewhere, ``P(M ≥ T)`` the fraction of the draws of one run's highest running score
    ``M`` (:func:`null_max_running_scores`) at or above it.

    :param max_scores_D: ``(D,)`` one null run's highest running score per draw.
    :param target: the score to reach.
    :param n_runs: runs tried for one kept run (the learning rates of a size and seed).
    """
    one_run = float(np.mean(np.asarray(max_scores_D) >= target))
    return 1.0 - (1.0 - one_run) ** n_runs


def null_floor(max_scores_D: np.ndarray, n_runs: int, level: float = 0.01) -> float:
    """The null floor ``F``: the smallest target with ``p_null(F) <= level`` (:func:`null_crossing`). One run may
    cross it with at most ``1 − (1 − level)^(1/L)``, so at most ``k = ⌊D · that⌋`` of the ``D`` draws may reach it: ``F``
    is the next float above the ``(k+1)``-th highest draw.

    :param max_scores_D: ``(D,)`` as for :func:`null_crossing`.
    :param n_runs: ``L``.
    :param level: the largest false-crossing probability allowed.
    """
    if not 0 < level < 1 or n_runs < 1:
        raise ValueError(f"need 0 < level < 1 and n_runs >= 1, got {level}, {n_runs}")
    descending = np.sort(np.asarray(max_scores_D, dtype=float))[::-1]
    allowed = math.floor(len(descending) * (1.0 - (1.0 - level) ** (1.0 / n_runs)) + 1e-9)
    return float(np.nextafter(descending[min(allowed, len(descending) - 1)], math.inf))


GAIN_BLOCKS = 5
"""Parts of a pilot's later games whose means carry its drift into :func:`pilot_gain`'s error."""
GAIN_GAMES = 4 * GAIN_BLOCKS
"""The fewest pilot games :func:`pilot_gain` measures over with ``GAIN_BLOCKS`` blocks."""


def pilot_gain(anchor_G: np.ndarray, pilot_G: np.ndarray, blocks: int = GAIN_BLOCKS) -> float:
    """How far a pilot's later games score above the anchor's, in standard errors that carry the pilot's drift:

    ``z = (mean(L) − mean(A)) / √(s²(A) / |A| + s²(m) / blocks)``,

    where ``A`` are the anchor's games, ``L`` the second half of the pilot's games in the order they ended, and ``m``
    the means of ``blocks`` consecutive, near-equal parts of ``L`` (``s²`` with one degree of freedom removed).

    The anchor plays at fixed parameters, so its games are independent draws. The pilot trains: its policy moves from
    game to game, so its running score wanders even where its mean does not rise, and can pass the null floor (drawn
    from the anchor's games) without improving. The spread of its block means carries that wandering into the error,
    which the spread of its single games would not.

    :param anchor_G: ``(G_a,)`` raw scores of the anchor's games, ``G_a >= 2``.
    :param pilot_G: ``(G_p,)`` raw scores of the pilot's games in the order they ended, ``G_p >= 4 · blocks``.
    :param blocks: parts of the pilot's second half (``>= 2``).
    :return: ``z``; ``inf`` (or ``-inf``) where every score in question is the same and the means differ.
    """
    anchor, pilot = np.asarray(anchor_G, dtype=float), np.asarray(pilot_G, dtype=float)
    if blocks < 2 or anchor.size < 2 or pilot.size < 4 * blocks:
        raise ValueError(
            f"need blocks >= 2, 2 or more anchor games and 4 x blocks pilot games, got {blocks}, {anchor.size}, {pilot.size}"
        )
    later = pilot[pilot.size // 2 :]
    means_B = np.array([part.mean() for part in np.array_split(later, blocks)])
    gain = float(later.mean() - anchor.mean())
    se = math.sqrt(np.var(anchor, ddof=1) / anchor.size + np.var(means_B, ddof=1) / blocks)
    if se == 0:
        return 0.0 if gain == 0 else math.copysign(math.inf, gain)
    return gain / se


def spaced_targets(floor: float, pilot_best: float, count: int = 2) -> tuple[float, ...]:
    """Criterion v8's targets: ``T_i = F + i (P − F) / (count + 1)``, ``i = 1 … count``, between the null floor ``F``
    and a pilot's best running score ``P``; none where the pilot did not pass the floor."""
    if pilot_best <= floor:
        return ()
    return tuple(floor + i * (pilot_best - floor) / (count + 1) for i in range(1, count + 1))
