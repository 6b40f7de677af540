"""Env-count scaling: the throughput model against closed forms, and the real CLI with a tiny budget."""

import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from rl_gns.cli import main
from rl_gns.core.maths.throughput import ThroughputModel, fit_throughput_model, predicted_wall_s
from rl_gns.core.maths.tradeoff import TradeoffFit

REPO = Path(__file__).resolve().parents[1]

MODEL = ThroughputModel(alpha=2e-3, beta=4e-4, gamma=5e-3, delta=3e-4, n_steps=128, n_epochs=4, n_minibatches=4)


def test_throughput_model_by_hand():
    # n_envs 8: rollout 128·(0.002 + 0.0004·8) = 0.6656 s; update 4·4·0.005 + 0.0003·4·8·128 = 0.08 + 1.2288 s
    assert MODEL.rollout_s(8) == pytest.approx(0.6656)
    assert MODEL.update_s(8) == pytest.approx(1.3088)
    assert MODEL.seconds_per_iteration(8) == pytest.approx(1.9744)
    # 2 devices halve the per-env and per-sample parts only
    assert MODEL.seconds_per_iteration(8, devices=2) == pytest.approx(128 * (0.002 + 0.0016) + 0.08 + 0.6144)


def test_fit_recovers_the_model_from_its_own_times():
    n_K = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], dtype=float)
    fit = fit_throughput_model(n_K, MODEL.rollout_s(n_K), MODEL.update_s(n_K), 128, 4, n_minibatches=4)
    for name in ("alpha", "beta", "gamma", "delta"):
        assert getattr(fit, name) == pytest.approx(getattr(MODEL, name), rel=1e-6)
    # rl-zoo3's protocol: minibatch fixed at 256, so M = n_envs * 128 / 256 grows with n_envs
    zoo = ThroughputModel(2e-3, 4e-4, 5e-3, 3e-4, n_steps=128, n_epochs=4, minibatch_size=256)
    assert zoo.update_s(8) == pytest.approx(4 * 4 * 0.005 + 0.0003 * 4 * 8 * 128)
    assert zoo.update_s(16) == pytest.approx(4 * 8 * 0.005 + 0.0003 * 4 * 16 * 128)
    fit = fit_throughput_model(n_K, zoo.rollout_s(n_K), zoo.update_s(n_K), 128, 4, minibatch_size=256)
    np.testing.assert_allclose(fit.update_s(n_K), zoo.update_s(n_K), rtol=1e-6)  # gamma, delta: one per-sample cost
    with pytest.raises(ValueError, match="exactly one"):
        fit_throughput_model(n_K, zoo.rollout_s(n_K), zoo.update_s(n_K), 128, 4)


def test_predicted_wall_time_is_steps_times_seconds_per_iteration():
    tradeoff = TradeoffFit(s_min=20.0, e_min=10_240.0, rms_log_residual=0.0)
    # n_envs 8 -> B = 1024 -> S = 20 + 10 = 30 iterations of 1.9744 s
    assert predicted_wall_s(MODEL, tradeoff, np.array([8.0]))[0] == pytest.approx(30 * 1.9744)
    assert np.isnan(predicted_wall_s(MODEL, tradeoff, np.array([2.0]), devices=4)[0])  # fewer envs than devices
    # past B_crit more envs stop paying: the prediction bottoms out, then rises with update cost
    wall = predicted_wall_s(MODEL, tradeoff, np.geomspace(1, 4096, 50))
    assert 0 < np.argmin(wall) < len(wall) - 1


@pytest.mark.slow
@pytest.mark.atari
def test_scaling_cli_tiny(tmp_path):
    """Two env counts on real Beam Rider, the second also on 2 data-parallel ranks, then the report stage again from
    disk alone."""
    out = tmp_path / "scaling"
    args = ["scaling", "--n-envs", "1,2", "--nproc", "1,2", "--n-steps", "16", "--iterations", "1", "--env-agent-steps", "64"]
    args += [
        "--out",
        str(out),
        "--sweep",
        str(REPO / "results/sweeps/beamrider_ram"),
        "--noise-run",
        str(REPO / "results/runs/beamrider_100k"),
        "--devices",
        "1,2",
    ]
    assert main(args) == 0
    rows = [json.loads(line) for line in (out / "measurements.jsonl").read_text().splitlines()]
    assert [(r["n_envs"], r["nproc"]) for r in rows] == [(1, 1), (2, 1), (2, 2)]  # 1 env does not split over 2 ranks
    assert all(r["agent_steps_per_s"] > 0 and r["peak_rss_mib"] > 0 and r["update_s_per_iteration"] > 0 for r in rows)
    assert rows[2]["all_reduce_s_per_iteration"] > 0 == rows[1]["all_reduce_s_per_iteration"]
    result = json.loads((out / "scaling.json").read_text())
    [ranks] = result["data_parallel"]
    assert ranks["nproc"] == 2 and ranks["speedup"] == pytest.approx(
        rows[1]["seconds_per_iteration"] / rows[2]["seconds_per_iteration"]
    )
    # an ideal all-reduce never slows a run; with timings this short the fit may put all time in the fixed term (1x)
    assert 1 <= ranks["predicted_speedup"] <= 2 and "| 2 | 2 |" in (out / "report.md").read_text()
    assert set(result["prediction"]["wall_s"]) == {"1", "2"}
    assert any("B_crit" in label for label in result["marks_n_envs"])
    assert (out / "scaling.png").stat().st_size > 0 and "| 2 | 32 |" in (out / "report.md").read_text()
    (out / "scaling.png").unlink()
    assert main([*args, "--report-only"]) == 0 and (out / "scaling.png").exists()
    assert len((out / "measurements.jsonl").read_text().splitlines()) == 3  # nothing re-measured
    # the report's commands name every setting and path given: run as written, they give the same report again
    measure, again = json.loads((out / "scaling.json").read_text())["commands"]
    assert f"Commands: `{measure}`, then `{again}`." in (out / "report.md").read_text()
    assert all(flag in measure for flag in ("--n-steps 16", "--iterations 1", "--env-agent-steps 64", f"--out {out}"))
    before = (out / "report.md").read_text()
    assert main(shlex.split(again)[1:]) == 0 and (out / "report.md").read_text() == before
    assert main([*shlex.split(measure)[1:], "--report-only"]) == 0  # the same settings: no other measurement refused


def test_scaling_cli_refuses_bad_settings(tmp_path, capsys):
    assert main(["scaling", "--n-envs", "3", "--n-minibatches", "5", "--out", str(tmp_path / "s")]) == 2
    assert (
        "--n-envs 3: a rollout of 384 agent steps (n_envs * n_steps) does not split into 5 minibatches"
        in capsys.readouterr().err
    )
    assert main(["scaling", "--n-envs", "3", "--minibatch-size", "0", "--out", str(tmp_path / "s")]) == 2
    assert "--n-envs 3: --minibatch-size must be >= 1, got 0" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
    assert main(["scaling", "--n-envs", "2", "--devices", "1,1", "--out", str(tmp_path / "s")]) == 2
    assert "--devices repeats a value: [1, 1]" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
    for plan in (["--n-envs", "4"], ["--n-envs", "3", "--nproc", "2"], ["--n-envs", "4,8", "--nproc", "2"]):
        assert main(["scaling", *plan, "--out", str(tmp_path / "s")]) == 2  # the model needs 2 one-process n_envs
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "needs at least 2 n_envs measured on one process" in err, err
        assert not (tmp_path / "s").exists()
    # each repeat was measured twice, in minutes, and weighed twice in the fit
    for args, message in ((["--n-envs", "2", "2"], "--n-envs repeats a value: [2, 2]"),
                          (["--n-envs", "2", "4", "--nproc", "1", "1"], "--nproc repeats a value: [1, 1]")):  # fmt: skip
        assert main(["scaling", *args, "--out", str(tmp_path / "s")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
        assert not (tmp_path / "s").exists()
