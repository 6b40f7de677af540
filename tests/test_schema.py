"""The typed run records: every committed run reads, a summary survives a round trip, a bad record names its file."""

import json
import math
import re
from pathlib import Path
from typing import Literal

import pytest

from rl_gns.records.rundir import PROGRESS, RunDir, read_sweep_results
from rl_gns.records.schema import (
    PROBE_FIELDS,
    PROBE_RESULTS_FIELDS,
    SWEEP_FIELDS,
    Count,
    Finite,
    NoiseScaleSummary,
    RecordError,
    RunConfig,
    RunSummary,
    Targets,
    conforms,
    require,
)

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_every_committed_run_reads_as_typed_records():
    runs = [RunDir(path.parent) for path in RESULTS.rglob("config.json") if RunDir(path.parent).log(PROGRESS).exists()]
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
        game="beam_rider", noise_scales=(noise,), advice={"predictor": "env_value"}, resumes=2, games_dropped=5,
        values={"device": "cpu"},
    )  # fmt: skip
    data = json.loads(json.dumps(summary.to_json()))
    assert data["b_simple_value_envs_run_average_ci95"] == [512.0, None] and data["device"] == "cpu"
    assert (data["resumes"], data["games_dropped"]) == (2, 5)
    assert RunSummary.from_json(data, "summary.json") == summary


def test_a_summary_writes_what_was_not_measured_as_null_and_reads_it_back_as_nan():
    noise = NoiseScaleSummary("envs", "total", math.nan, math.inf, (math.nan, None))
    summary = RunSummary(
        env_steps=128, iterations=2, wall_s=1.0, n_envs_final=2, score_last_100_mean=None, stop_score_reached_at=None,
        game="pong", noise_scales=(noise,), values={"agent_steps_per_s": math.nan, "nested": {"x": [1.0, -math.inf]}},
    )  # fmt: skip
    text = json.dumps(summary.to_json(), allow_nan=False)  # raises on NaN or infinity
    data = json.loads(text)
    assert data["b_simple_total_envs"] is None and data["b_simple_total_envs_run_average"] is None
    assert data["agent_steps_per_s"] is None and data["nested"] == {"x": [1.0, None]}
    read = RunSummary.from_json(data, "summary.json").noise_scales[0]
    assert math.isnan(read.b_simple) and math.isnan(read.run_average) and math.isnan(read.run_average_ci95[0])


def test_a_record_without_a_field_it_needs_names_its_file():
    with pytest.raises(RecordError, match=r"run/config.json: no 'rollout_size'"):
        RunConfig.from_json({"game": "pong", "n_envs": 2, "n_steps": 32, "minibatch_size": 32}, "run/config.json")
    with pytest.raises(RecordError, match=r"'n_envs' is 'eight', not int"):
        RunConfig.from_json({"game": "pong", "n_envs": "eight", "n_steps": 32, "minibatch_size": 32, "rollout_size": 64}, "c")
    run = {"game": "pong", "n_envs": 2, "n_steps": 32, "minibatch_size": 32, "rollout_size": 64}
    with pytest.raises(RecordError, match=r"c: no 'gns_scheme'"):
        RunConfig.from_json(run, "c")
    config = RunConfig.from_json({**run, "gns_scheme": ["minibatch"]}, "c")
    assert config.measured_schemes == ("minibatch",) and math.isnan(config.learning_rate)
    # one scheme named as a string: a run of an rl-gns before 2026-11-22, which `rl-gns compact` brings up to date
    old = r"^runs/a/config.json: written by an rl-gns before 2026-11-22; `rl-gns compact runs/a` brings it up to date$"
    with pytest.raises(RecordError, match=old):
        RunConfig.from_json({**run, "gns_scheme": "minibatch"}, "runs/a/config.json")


@pytest.mark.parametrize(
    ("key", "value"),
    [("max_n_envs", "64"), ("max_n_envs", 0), ("max_n_envs", [64]), ("frame_skip", 0.5), ("learning_rate", -1)],
)
def test_a_config_whose_setting_a_reader_uses_is_of_the_wrong_kind_names_it(key, value):
    config = {"game": "pong", "n_envs": 2, "n_steps": 32, "minibatch_size": 32, "rollout_size": 64, "gns_scheme": []}
    config[key] = value
    with pytest.raises(RecordError, match=rf"c: '{key}' is"):
        RunConfig.from_json(config, "c")
    if key == "max_n_envs":  # null: a run that does not adapt its env count has no ceiling
        assert RunConfig.from_json({**config, key: None}, "c").settings[key] is None


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        (3, int, True), (3.0, int, True), (3.5, int, False), (True, int, False), ("3", int, False),
        (3, float, True), (math.inf, float, True), (None, float, False), (None, float | None, True),
        ([1, 2.0], list[float], True), ([1, "2"], list[float], False), ({"a": 1}, list[float], False),
        ([1.0, None, 2.0], tuple[float, float | None, float], True), ([1.0, 2.0], tuple[float, float, float], False),
        ({"x": [1, 2, 3]}, dict[str, tuple[float, float, float]], True), ({"x": [1, 2]}, dict[str, list[str]], False),
        ("midpoint", Literal["passage", "midpoint"], True), ("end", Literal["passage", "midpoint"], False),
        (1, Literal[True], False), ("runs/a", Path, True), (["envs"], tuple[Literal["minibatch", "envs"], ...], True),
        (1, Count, True), (0, Count, False), (-3, Count, False), (2.0, Count, True), (True, Count, False),
        (1.5, Finite, True), (math.nan, Finite, False), (-math.inf, Finite, False), ("1", Finite, False),
        ([0.5], Targets, True), ([], Targets, False), ([0.5, math.nan], Targets, False), (None, Targets | None, True),
    ],
)  # fmt: skip
def test_a_json_value_conforms_to_its_kind(value, kind, expected):
    assert conforms(value, kind) is expected


def test_every_committed_study_file_has_the_fields_its_readers_use():
    kinds = {"sweep.json": SWEEP_FIELDS, "probe.json": PROBE_FIELDS, "probe_results.json": PROBE_RESULTS_FIELDS}
    for name, fields in kinds.items():
        paths = list(RESULTS.rglob(name))
        assert len(paths) >= 15, name
        for path in paths:
            require(json.loads(path.read_text()), path, fields)
    analysed = [p for p in RESULTS.rglob("results.json") if (p.parent / "sweep.json").exists()]
    assert analysed and all(read_sweep_results(p)["targets"] for p in analysed)


def test_require_names_the_file_and_the_first_field_that_is_missing_or_of_the_wrong_kind():
    kinds = {"n": int, "targets": list[float], "note": str | None}
    assert require({"n": 2, "targets": [1.5]}, "f.json", kinds) == {"n": 2, "targets": [1.5]}
    with pytest.raises(RecordError, match=r"^f.json: no 'targets'$"):
        require({"n": 2}, "f.json", kinds)
    with pytest.raises(RecordError, match=r"^f.json: 'n' is '2', not int$"):
        require({"n": "2", "targets": []}, "f.json", kinds)
    with pytest.raises(RecordError, match=r"^f.json: not a JSON object$"):
        require([1], "f.json", kinds)
    assert require({}, "f.json", kinds, optional=True) == {}
    with pytest.raises(RecordError, match=r"^f.json: 'window' is 0, not int in 1..2147483647$"):
        require({"window": 0}, "f.json", {"window": Count})
    with pytest.raises(RecordError, match=r"^f.json: 'targets' is \[\], not non-empty list\[finite float\] \| None$"):
        require({"targets": []}, "f.json", {"targets": Targets | None})


def test_require_reads_a_whole_number_written_as_a_float_as_an_int():
    kinds = {"n": Count, "sizes": list[int], "ci": tuple[float, float] | None, "rows": dict[str, int], "lr": float}
    read = require({"n": 2.0, "sizes": [64.0, 128], "ci": [1, 2.5], "rows": {"a": 3.0}, "lr": 1.0}, "f.json", kinds)
    assert read == {"n": 2, "sizes": [64, 128], "ci": [1, 2.5], "rows": {"a": 3}, "lr": 1.0}
    assert [type(v) for v in (read["n"], *read["sizes"], read["rows"]["a"], read["lr"])] == [int, int, int, int, float]


def test_a_summary_whose_noise_scales_or_advice_are_of_the_wrong_kind_names_the_field():
    summary = {"env_steps": 64, "b_simple_value_envs": 812.5, "b_simple_value_envs_run_average_ci95": [512.0, None]}
    assert RunSummary.from_json(summary, "s.json").noise_scales[0].run_average_ci95 == (512.0, None)
    for change, message in (
        ({"b_simple_value_envs": "abc"}, "'b_simple_value_envs' is 'abc', not float | None"),
        ({"b_simple_value_envs_run_average_ci95": [1, 2, 3]}, "'b_simple_value_envs_run_average_ci95' is \\[1, 2, 3\\]"),
        ({"advice": "text"}, "'advice' is 'text', not dict | None"),
    ):
        with pytest.raises(RecordError, match=f"^s.json: {message}"):
            RunSummary.from_json({**summary, **change}, "s.json")


def test_a_summary_whose_counts_or_durations_are_out_of_range_names_the_field():
    summary = {"env_steps": 64, "iterations": 2, "wall_s": 1.5}
    assert RunSummary.from_json(summary, "s.json").iterations == 2
    for change, message in (
        ({"env_steps": -5}, "'env_steps' is -5, not int in 0..2147483647"),
        ({"iterations": -1}, "'iterations' is -1, not int in 0..2147483647 | None"),
        ({"wall_s": -0.5}, "'wall_s' is -0.5, not finite float >= 0 | None"),
        ({"n_envs_final": 0}, "'n_envs_final' is 0, not int in 1..2147483647 | None"),
        ({"resumes": -1}, "'resumes' is -1, not int in 0..2147483647 | None"),
        ({"games_dropped": 1.5}, "'games_dropped' is 1.5, not int in 0..2147483647 | None"),
        ({"env_steps": 10**30}, f"'env_steps' is {10**30}, not int in 0..2147483647"),  # numpy cannot hold it
    ):
        with pytest.raises(RecordError, match=f"^s.json: {re.escape(message)}$"):
            RunSummary.from_json({**summary, **change}, "s.json")


def test_a_path_recorded_inside_a_moved_study_is_found_where_the_study_lies_now():
    """A probe cloned to another place: its records name full paths of the old place. Recorded with its directory's
    full path, or with the directory as typed (relative) and a full path inside it, each path lies now at the same
    place relative to the directory; a path outside a relatively recorded directory cannot be moved, and stays."""
    from rl_gns.records.schema import changed_settings, relocated

    old, new = "/work/a/results/p/at500k", "/home/u/rl-gns/results/p/at500k"
    held = "/work/a/results/p/at500k/branch_point.zip"
    assert relocated(held, old, new) == "/home/u/rl-gns/results/p/at500k/branch_point.zip"
    assert relocated(held, "results/p/at500k", new) == "/home/u/rl-gns/results/p/at500k/branch_point.zip"
    assert relocated("/data/agent.zip", "results/p/at500k", new) == "/data/agent.zip"
    recorded = {"out": "results/p/at500k", "init_from": held, "seed": 0}
    assert changed_settings(recorded, {"out": new, "init_from": f"{new}/branch_point.zip", "seed": 0}, ("out",)) == []
    assert changed_settings(recorded, {"out": new, "init_from": f"{new}/other.zip", "seed": 1}, ("out",)) == [
        "init_from",
        "seed",
    ]
