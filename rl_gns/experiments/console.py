"""What ``rl-gns train`` prints while it trains: a line per PPO iteration, at most one a second, an SB3 logger output.

    [ 12,288/100,000 agent steps]  score 512.3 (last 100)  1,234 steps/s  ETA 1m11s  B_simple(env_value) 790 [512, inf]

SB3's full table of every logged value (``HumanOutputFormat``) replaces it with ``--verbose``; ``progress.csv`` and
TensorBoard hold every value either way (and a console whose reader is gone costs a run nothing:
:mod:`rl_gns.experiments.streams`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from stable_baselines3.common.logger import KVWriter

from rl_gns.core.maths.advice import DEFAULT_PREDICTOR
from rl_gns.core.maths.names import gns_key
from rl_gns.core.maths.schemes import Candidate


def duration(seconds: float) -> str:
    """``1h02m``, ``3m05s`` or ``42s``; ``?`` for a duration not known."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def number(value: float) -> str:
    """Three significant figures, ``inf`` for an unbounded end."""
    return "inf" if math.isinf(value) else f"{value:.3g}"


class ConsoleLine(KVWriter):
    """A line per logged PPO iteration, at most one per ``min_interval_s`` (short rollouts log many iterations a
    second) and always the last: agent steps of the budget, the running score, speed, time left, and the noise scale
    of the run's predictor with its 95 % interval once measured (the latest measurement, whichever line shows it).

    :param total_steps: the run's budget in agent steps (for the time left).
    :param score_games: games in the mean score SB3 logs (``rollout/ep_rew_mean``; SB3's ``stats_window_size``).
    :param stream: where the lines go.
    :param min_interval_s: seconds between two lines at least (0: every iteration).
    :param clock: seconds, monotonic.
    :param predictor: the candidate whose ``B_simple`` the line shows (:func:`rl_gns.core.maths.advice.predictor_for`).
    """

    def __init__(
        self,
        total_steps: int,
        score_games: int = 100,
        stream: TextIO | None = None,
        min_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        predictor: str = DEFAULT_PREDICTOR,
    ) -> None:
        self.total_steps, self.score_games = total_steps, score_games
        self.stream = sys.stdout if stream is None else stream
        self.min_interval_s, self.clock = min_interval_s, clock
        self._printed_at = -math.inf
        self._b_simple: tuple[float, float, float] | None = None
        self.predictor = predictor
        candidate = Candidate.parse(predictor)
        scheme, loss = candidate.scheme, candidate.loss
        self.b_simple_keys = tuple(gns_key(scheme, "b_simple", loss, suffix) for suffix in ("avg", "avg_low", "avg_high"))

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        steps, fps = key_values.get("time/total_timesteps", step), key_values.get("time/fps", 0)
        point, low, high = (float(key_values.get(key, math.nan)) for key in self.b_simple_keys)
        if math.isfinite(point):
            self._b_simple = (point, low, high)
        now = self.clock()
        if now - self._printed_at < self.min_interval_s and steps < self.total_steps:
            return
        self._printed_at = now
        parts = [f"[{steps:>{len(f'{self.total_steps:,}')},}/{self.total_steps:,} agent steps]"]
        if "rollout/ep_rew_mean" in key_values:
            parts.append(f"score {key_values['rollout/ep_rew_mean']:.1f} (last {self.score_games})")
        if fps:
            parts += [f"{fps:,} steps/s", f"ETA {duration((self.total_steps - steps) / fps)}"]
        if self._b_simple is not None:
            point, low, high = self._b_simple
            parts.append(f"B_simple({self.predictor}) {number(point)} [{number(low)}, {number(high)}]")
        self.stream.write("  ".join(parts) + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Nothing to close: the stream belongs to the caller."""
