"""The v2 criterion's arithmetic on hand-built probes: errors, rank correlation, the leave-one-game-out constant and the
decision."""

import json
import math
from pathlib import Path

import pytest

from rl_gns.reports.probe_validation import (
    ProbePair,
    ProbeValidationConfig,
    bound_scores,
    distance_outside,
    leave_one_game_out,
    ranking,
    ratio_range,
    retests_apart,
    score,
    validate,
    verdict,
)


def pair(game: str, b_crit: float) -> ProbePair:
    return ProbePair(game, 100_000, b_crit, (b_crit / 2, b_crit * 2), {}, None)


PAIRS = [pair("A", 100.0), pair("A", 1000.0), pair("B", 10.0), pair("C", 10_000.0)]


def test_score_is_the_median_log_error_and_the_rank_correlation():
    exact = score("exact", [100.0, 1000.0, 10.0, 10_000.0], PAIRS)
    assert exact.median_error == 0 and exact.spearman == pytest.approx(1.0)
    off = score("10x", [1000.0, 10_000.0, 100.0, 100_000.0], PAIRS)
    assert off.median_error == pytest.approx(1.0) and off.ratios == pytest.approx([10.0] * 4)
    unresolved = score("nan", [math.nan, 1000.0, math.nan, math.nan], PAIRS)
    assert unresolved.median_error == math.inf  # 3 of 4 infinite errors
    assert math.isnan(score("constant", [500.0] * 4, PAIRS).spearman)


def test_the_ratio_range_spans_finite_predictions_and_counts_the_others():
    assert ratio_range([0.27, 11.0, 1.5]) == "0.27–11"
    assert ratio_range([math.nan, 0.55, math.inf, 0.93]) == "0.55–0.93 (2 pairs without a finite prediction)"
    assert ratio_range([0.5, math.nan]) == "0.5–0.5 (1 pair without a finite prediction)"
    assert ratio_range([math.nan]) == ratio_range([]) == "–"


def test_distance_outside_an_interval_is_counted_in_decades():
    assert distance_outside(500.0, 100.0, 1000.0) == 0 and distance_outside(100.0, 100.0, math.inf) == 0
    assert distance_outside(10.0, 100.0, 1000.0) == pytest.approx(1.0)
    assert distance_outside(1e5, 100.0, 1000.0) == pytest.approx(2.0)
    assert distance_outside(math.inf, 100.0, math.inf) == 0  # unresolved, and the probe sets no upper end either
    assert distance_outside(math.inf, 100.0, 1000.0) == math.inf and distance_outside(0.0, 1.0, 2.0) == math.inf


def test_bound_scores_count_lower_bounds_and_identified_intervals_alike():
    """Three probes: identified [50, 200], bounded below at 1,000, and one that bounds nothing (left out)."""
    identified = ProbePair("A", 50_000, 100.0, (50.0, 200.0), {"x": (100.0, None)}, None)
    below = ProbePair("B", 50_000, math.nan, (math.nan, math.nan), {"x": (10.0, None)}, "at least 1,000", b_crit_low=1e3)
    nothing = ProbePair("C", 50_000, math.nan, (math.nan, math.nan), {"x": (1.0, None)}, "neither side")
    scores = {b.name: b for b in bound_scores([identified, below, nothing])}
    assert scores["x"].probes == 2 and scores["x"].inside == 1 and scores["x"].median_distance == pytest.approx(1.0)
    constant = scores["constant 746"]  # above [50, 200] by log10(746 / 200); under the lower bound 1,000
    expected = (math.log10(746 / 200) + math.log10(1000 / 746)) / 2
    assert constant.inside == 0 and constant.median_distance == pytest.approx(expected)
    assert list(scores) == ["constant 746", "x"]  # fewest decades outside first
    assert bound_scores([nothing]) == []


def test_leave_one_game_out_uses_only_the_other_games():
    # A: the median of log10 over B and C (1 and 4) is 2.5; B: over A and C (2, 3, 4) is 3; C: over A and B (2, 3, 1) is 2
    assert leave_one_game_out(PAIRS) == pytest.approx([10**2.5, 10**2.5, 1000.0, 100.0])
    assert math.isnan(leave_one_game_out([pair("A", 5.0)])[0])


def test_verdict_names_a_winner_only_past_both_constants_and_the_tie_margin():
    constants = [score("c1", [746.0] * 4, PAIRS), score("c2", leave_one_game_out(PAIRS), PAIRS)]
    exact = score("exact", [100.0, 1000.0, 10.0, 10_000.0], PAIRS)
    assert verdict([exact], constants).startswith("exact beats both constants")
    assert verdict([score("10x", [1000.0, 10_000.0, 100.0, 100_000.0], PAIRS)], constants).startswith("No candidate")
    near = min(c.median_error for c in constants) - 0.01
    close = score("close", [b * 10**near for b in (100.0, 1000.0, 10.0, 10_000.0)], PAIRS)
    assert "tie margin" in verdict([close], constants)


def test_a_retest_of_an_agent_already_probed_is_left_out_of_the_pairs(tmp_path):
    # first_seed null: a probe written before the field was, whose seeds start at 0
    for name, source, steps, first_seed in [("a", "trunk", 100, None), ("b", "trunk", 100, 3), ("c", "trunk", 200, 0)]:
        (tmp_path / name).mkdir()
        record = {"source": source, "env_steps": steps, "first_seed": first_seed, "window": 20}
        (tmp_path / name / "probe.json").write_text(json.dumps(record))
    primary, retests = retests_apart([tmp_path / "b", tmp_path / "a", tmp_path / "c"])
    assert primary == [tmp_path / "a", tmp_path / "c"] and retests == [tmp_path / "b"]


def test_a_probe_verdict_states_only_what_its_fit_bounds():
    import numpy as np

    from rl_gns.core.maths.tradeoff import LocalTradeoffFit
    from rl_gns.reports import probe_report

    sizes = np.array([128.0, 256.0, 256.0, 1024.0, 1024.0])
    both = LocalTradeoffFit(s_min=20.0, e_min=20_000.0, b_crit_low=400.0, b_crit_high=3_000.0, level=0.95, n_points=5)
    said = probe_report.verdict(both, sizes, 9, 18)
    assert said == "B_crit 1e+03 agent steps, 95 % interval [400, 3e+03] (5 branches at 3 sizes)"
    below = LocalTradeoffFit(s_min=-5.0, e_min=20_000.0, b_crit_low=300.0, b_crit_high=math.inf, level=0.95, n_points=5)
    assert probe_report.verdict(below, sizes, 9, 18).startswith("B_crit not identified: at least 300 agent steps")
    neither = LocalTradeoffFit(s_min=-155.0, e_min=275_848.0, b_crit_low=0.0, b_crit_high=math.inf, level=0.95, n_points=5)
    assert probe_report.verdict(neither, sizes, 9, 18) == (  # 9 reached, the fastest rate of each seed kept: 5
        "B_crit not identified: the data bound it on neither side (9 of 18 branches reached the target, 5 kept at 3 sizes)"
    )
    assert probe_report.verdict(None, sizes[:2], 2, 18) == (
        "B_crit not identified: 2 of 18 branches reached the target, 2 kept at 2 sizes"
    )
    # steps flat in the rollout size: E_min at 0 (NumPy scalars, as the censored fit returns them), bounded above only
    flat = LocalTradeoffFit(
        s_min=np.float64(961.7), e_min=np.float64(0.0), b_crit_low=0.0, b_crit_high=1_407.3, level=0.95, n_points=5
    )
    assert flat.identified is False and json.loads(json.dumps({"identified": flat.identified})) == {"identified": False}
    assert probe_report.verdict(flat, sizes, 9, 18) == (
        "B_crit not identified: at most 1.41e+03 agent steps (95 % upper end; the fit puts E_min at 0: the steps do not "
        "fall as the rollout size grows) (9 of 18 branches reached the target, 5 kept at 3 sizes)"
    )


def test_the_table_lists_each_game_by_stage(tmp_path):
    """The committed Beam Rider probes at 50k, 100k and 150k agent steps, given with directory names out of numeric
    order: the table's rows go by branch point."""
    committed = Path(__file__).resolve().parents[1] / "results" / "probes" / "BeamRider"
    stages = tuple(committed / stage for stage in ("at100k", "at150k", "at50k"))
    validate(ProbeValidationConfig(probe_dirs=stages, out=tmp_path))
    rows = [line for line in (tmp_path / "probes.md").read_text().split("\n") if line.startswith("| beam_rider |")]
    points = [int(row.split("|")[2].strip().replace(",", "")) for row in rows]
    assert points == sorted(points) and len(points) == len(set(points)) >= 3


def test_pairs_timed_by_the_first_window_are_left_out_of_the_second_ranking(tmp_path):
    """The committed v4 probes of Seaquest at 100k identify B_crit. In the first, 9 of 18 kept branches reached the
    target with their first 20 games; in its retest 7 of 18, but its E_min lies within 2x of the agent step the first
    20 games stand for. The criterion counts the first, the ranking without floored pairs neither."""
    committed = Path(__file__).resolve().parents[1] / "results" / "probes_v4" / "Seaquest"
    for probe in ("at100k", "at100k_retest"):
        validate(ProbeValidationConfig(probe_dirs=(committed / probe,), out=tmp_path / probe))
        record = json.loads((tmp_path / probe / "probes.json").read_text())
        (pair,) = record["pairs"]
        assert math.isfinite(pair["b_crit"]) and 1 < pair["resolution"] < 2
        assert record["verdict"].startswith("Not ranked: 1 identified pairs from 1 game(s)")
        assert record["verdict_without_floored_pairs"].startswith("Not ranked: 0 identified pairs from 0 game(s)")
    assert pair["first_window"] == pytest.approx(7 / 18)


def test_each_metric_table_covers_the_pairs_its_label_names(tmp_path):
    """The committed v7 probes of Pong and Qbert identify B_crit at four branch points; Pong's at 1.95M is floored (its
    E_min lies below twice the agent step its first window stands for). The first table scores all four pairs, the
    second the three the criteria v5 and later count."""
    committed = Path(__file__).resolve().parents[1] / "results" / "probes_v7"
    dirs = tuple(committed / game / at for game in ("Pong", "Qbert") for at in ("at1000k", "at1950k"))
    validate(ProbeValidationConfig(probe_dirs=dirs, out=tmp_path))
    record = json.loads((tmp_path / "probes.json").read_text())
    floored = [p["game"] for p in record["pairs"] if p["first_window"] >= 0.5 or p["resolution"] < 2]
    assert len(record["pairs"]) == 4 and floored == ["pong"]
    constants = [s for s in record["scores"] if s["name"] == "constant 746"]
    counted = [s for s in record["scores_without_floored_pairs"] if s["name"] == "constant 746"]
    assert len(constants[0]["ratios"]) == 4 and len(counted[0]["ratios"]) == 3
    text = (tmp_path / "probes.md").read_text()
    assert "Over all 4 identified pairs" in text and "The same metrics over these 3 pair(s):" in text
    assert text.count("| predictor | median abs log10 error |") == 2


def test_a_pair_is_floored_by_its_first_windows_or_by_an_e_min_near_their_step():
    assert not pair("A", 100.0).floored  # reports that predate both counts
    assert ProbePair("A", 1, 1.0, (1.0, 1.0), {}, None, first_window=0.5).floored
    assert ProbePair("A", 1, 1.0, (1.0, 1.0), {}, None, first_window=0.4, resolution=1.9).floored
    assert not ProbePair("A", 1, 1.0, (1.0, 1.0), {}, None, first_window=0.4, resolution=2.0).floored


def test_ranking_needs_three_games_and_then_compares_with_both_constants():
    pairs = [pair("A", 700.0), pair("B", 800.0), pair("C", 750.0)]
    for p, value in zip(pairs, (700.0, 800.0, 750.0), strict=True):
        p.candidates = {"exact": (value, None)}
    scores, baselines, line = ranking(pairs)
    assert [s.name for s in scores] == ["exact"] and scores[0].median_error == 0
    assert [b.name for b in baselines] == ["constant 746", "leave-one-game-out constant"]
    assert line.startswith("exact beats both constants")
    assert ranking(pairs[:2])[2].startswith("Not ranked: 2 identified pairs from 2 game(s)")
