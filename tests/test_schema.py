"""The typed run records: every committed run reads, a summary survives a round trip, a bad record names its file."""

import json
import math
from pathlib import Path

import pytest

from rl_gns.records.rundir import RunDir
from rl_gns.records.schema import NoiseScaleSummary, RecordError, RunConfig, RunSummary

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_every_committed_run_reads_as_typed_records():
    runs = [RunDir(path.parent) for path in RESULTS.rglob("config.json") if (path.parent / "progress.csv").exists()]
    assert len(runs) > 100  # the sweeps, benchmarks and single runs of results/, written by every version since 2026-11-20
    for run in runs:
        config = run.config()
        assert config.rollout_size == config.n_envs * config.n_steps and config.n_minibatches >= 1, run.path
        if run.status() == "done":
            summary = run.summary()
            assert summary.env_steps > 0 and summary.n_envs_final in (None, *range(config.n_envs, 1025)), run.path
            assert {n.scheme for n in summary.noise_scales} <= set(config.measured_schemes) | {"ranks_all"}, run.path


def test_a_summary_survives_writing_and_reading():
    noise = NoiseScaleSummary("envs", "value", 812.5, 790.0, (512.0, None))
    summary = RunSummary(
        env_steps=4096, iterations=16, wall_s=12.5, n_envs_final=2, score_last_100_mean=None, stop_score_reached_at=2048,
        game="beam_rider", noise_scales=(noise,), advice={"predictor": "env_value"}, values={"device": "cpu"},
    )  # fmt: skip
    data = json.loads(json.dumps(summary.to_json()))
    assert data["b_simple_value_envs_run_average_ci95"] == [512.0, None] and data["device"] == "cpu"
    assert RunSummary.from_json(data, "summary.json") == summary


def test_a_record_without_a_field_it_needs_names_its_file():
    with pytest.raises(RecordError, match=r"run/config.json: no 'rollout_size'"):
        RunConfig.from_json({"game": "pong", "n_envs": 2, "n_steps": 32, "minibatch_size": 32}, "run/config.json")
    with pytest.raises(RecordError, match=r"'n_envs' is 'eight', not int"):
        RunConfig.from_json({"game": "pong", "n_envs": "eight", "n_steps": 32, "minibatch_size": 32, "rollout_size": 64}, "c")
    legacy = RunConfig.from_json(
        {"game": "pong", "n_envs": 2, "n_steps": 32, "minibatch_size": 32, "rollout_size": 64, "gns_scheme": "minibatch"}, "c"
    )
    assert legacy.legacy_keys and legacy.measured_schemes == ("minibatch",) and math.isnan(legacy.learning_rate)
