"""SB3 callbacks of rl-gns."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from rl_gns.core.targets import DEFAULT_WINDOW, running_score
from rl_gns.records.rundir import EPISODE_FIELDS


class EpisodeLogger(BaseCallback):
    """Appends every finished game to ``episodes.csv`` and optionally stops at a target score.

    Rows: ``env_steps`` (agent steps when the game finished), ``score`` (raw whole-game score from
    ``info["episode"]``), ``length_frames``, ``wall_s`` (seconds since training started). Each row
    is flushed, so a killed run keeps every game it finished.

    :param path: the CSV file to create.
    :param stop_score: stop training once the mean of the last ``window`` scores reaches this; ``None``: never.
    :param window: games in the running score (:func:`rl_gns.core.targets.running_score`).
    """

    def __init__(self, path: str | Path, stop_score: float | None = None, window: int = DEFAULT_WINDOW) -> None:
        super().__init__()
        self.path = Path(path)
        self.stop_score = stop_score
        self.window = window
        self.scores: list[float] = []
        self.reached_at: int | None = None

    def _on_training_start(self) -> None:
        self._file = open(self.path, "w", newline="")
        self._writer = csv.writer(self._file)
        self._writer.writerow(EPISODE_FIELDS)
        self._file.flush()
        self._start = time.perf_counter()

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            episode = info.get("episode")
            if episode is None:
                continue
            self.scores.append(float(episode["r"]))
            row = (self.num_timesteps, episode["r"], episode["l"], round(time.perf_counter() - self._start, 3))
            self._writer.writerow(row)
            self._file.flush()
        if self.stop_score is not None and len(self.scores) >= self.window:
            if running_score(np.asarray(self.scores[-self.window :]), self.window)[-1] >= self.stop_score:
                self.reached_at = self.num_timesteps
                return False
        return True

    def _on_training_end(self) -> None:
        self._file.close()
