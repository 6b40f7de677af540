"""The pre-registered criterion (docs/prediction-criterion.md) on hand-built analysed sweeps."""

import json
import math

import pytest

from rl_gns.reports.predictor_validation import ValidationConfig, error, load_pairs, rank, validate


def write_sweep(path, game, targets):
    """An analysed sweep's results.json: per target (sizes reached, B_crit, its interval, candidates)."""
    path.mkdir()
    entries = []
    for target, sizes, b_crit, candidates in targets:
        steps = [1 + b_crit / size for size in sizes]  # S = S_min (1 + B_crit / B) with S_min = 1
        per_size = {"b_simple_K": [1.0] * len(sizes), "n_measurements_K": [10] * len(sizes)}
        entries.append({
            "target": target, "rollout_size_K": sizes, "steps_K": steps,
            "experience_K": [size * s for size, s in zip(sizes, steps, strict=True)], "wall_s_K": [1.0] * len(sizes),
            "best_lr_K": [[5e-4]] * len(sizes), "seeds_reached_K": [3] * len(sizes), "censored_sizes": [],
            "fit": {"s_min": 1, "e_min": b_crit, "rms_log_residual": 0}, "ci_s_min": None, "ci_e_min": None,
            "b_crit": b_crit, "ci_b_crit": [0.8 * b_crit, 1.25 * b_crit], "flags": [], "not_identified": None,
            "candidates": {
                name: {"value": v, "ci": None if ci is None else list(ci), **per_size} for name, (v, ci) in candidates.items()
            },
        })  # fmt: skip
    settings = {"env": game, "backend": "ram", "targets": [t[0] for t in targets], "window": 20, "n_envs": [2, 4, 8],
                "n_steps": 32, "n_epochs": 4, "n_minibatches": 4, "minibatch_size": None, "n_envs_ref": 8, "seeds": 3,
                "runs": [], "budget_steps": 400_000, "lr_ref": 5e-4, "lr_rule": "sqrt", "lr_points": 1, "lr_factor": 2.0,
                "gns_scheme": ["envs"]}  # fmt: skip
    (path / "results.json").write_text(json.dumps({"settings": settings, "targets": entries}))


def test_rank_by_median_log_error_then_overlap_then_cost(tmp_path):
    write_sweep(tmp_path / "a", "GameA", [
        (1.0, [64, 128, 256], 1000.0, {"mb_xM_policy": (10_000.0, None), "env_total": (1_100.0, (900.0, 1_300.0)),
                                       "mb_total": (1_050.0, (2_000.0, 3_000.0)), "env_value": (math.inf, None)}),
        (2.0, [64, 128], 500.0, {"mb_xM_policy": (500.0, None), "env_total": (500.0, None),
                                 "mb_total": (500.0, None), "env_value": (500.0, None)}),  # 2 sizes: not admitted
    ])  # fmt: skip
    write_sweep(tmp_path / "b", "GameB", [
        (3.0, [64, 128, 256, 512], 2000.0, {"mb_xM_policy": (200_000.0, None), "env_total": (2_100.0, (1_800.0, 2_500.0)),
                                            "mb_total": (2_100.0, None), "env_value": (math.inf, None)}),
    ])  # fmt: skip
    pairs, skipped = load_pairs((tmp_path / "a", tmp_path / "b"))
    assert len(pairs) == 2 and skipped == ["GameA target 2: 2 rollout sizes reached the target"]
    ranking = rank(pairs)
    # env_total and mb_total tie on the primary error (within 0.05): env_total's intervals overlap the fit in 2/2
    assert [r.name for r in ranking] == ["env_total", "mb_total", "mb_xM_policy", "env_value"]
    assert ranking[0].overlap == 1.0 and ranking[1].overlap == 0.0
    assert ranking[2].median_error == pytest.approx((1.0 + 2.0) / 2)
    assert math.isinf(ranking[3].median_error)  # unresolved everywhere: an infinite error
    assert error(100.0, 1000.0) == pytest.approx(1.0) and math.isinf(error(-1.0, 10.0))

    report = validate(ValidationConfig((tmp_path / "a", tmp_path / "b"), out=tmp_path / "out"))
    text = report.read_text()
    assert "| 1 | `env_total` |" in text and "## Per game and target: `env_total`" in text
    assert (tmp_path / "out" / "predicted_vs_fitted.png").exists()
