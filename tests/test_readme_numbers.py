"""The README's numbers, re-derived from the tracked results by the commands docs/results.md gives for them: a reader
or a committed result that moves one of them fails here."""

import json
import re
import statistics
from pathlib import Path

from conftest import rl_gns

from rl_gns.core.maths.advice import VALIDATED
from rl_gns.records.rundir import RunDir

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
WORDS = dict(enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four twenty-five".split()
))  # fmt: skip


def one_line(name: str) -> str:
    """A file of the repository (``"README.md"``, ``"docs/probe.md"``) as one line of text (its sentences wrap
    anywhere)."""
    return re.sub(r"\s+", " ", (ROOT / name).read_text())


def readme() -> str:
    """The README as one line of text."""
    return one_line("README.md")


def test_command_1s_time_and_speed():
    summary = json.loads((RESULTS / "runs" / "beamrider_100k" / "summary.json").read_text())
    minutes, speed = summary["wall_s"] / 60, int(summary["agent_steps_per_s"])
    steps = f"{summary['env_steps'] / 1000:.0f}k"  # the budget, rounded up to whole rollouts
    assert f"{steps} agent steps in {minutes:.1f} minutes ({speed} agent steps/s;" in readme()


def test_the_ratio_of_env_value_to_b_crit_on_sweeps_from_scratch(tmp_path, capsys):
    """``rl-gns validate-predictors`` on the four criterion-v1 sweeps of PPO: on the games whose fits are not degenerate
    (every ratio within 10x), the range of ``env_value``'s ratio to the fitted ``B_crit`` that docs/limits.md gives."""
    games = [RESULTS / "validation" / game for game in ("spaceinvaders", "seaquest", "beamrider", "breakout")]
    status, stderr = rl_gns(capsys, "validate-predictors", *games, "--out", tmp_path)
    assert status == 0, stderr
    ratios: dict[str, list[float]] = {}
    for pair in json.loads((tmp_path / "predictors.json").read_text())["pairs"]:
        ratios.setdefault(pair["game"], []).append(pair["candidates"]["env_value"][0] / pair["b_crit"])
    within = [r for game in ratios.values() if all(0.1 <= r <= 10 for r in game) for r in game]
    n_within = sum(all(0.1 <= r <= 10 for r in game) for game in ratios.values())
    limits = one_line("docs/limits.md")
    claim = f"criterion on {WORDS[len(ratios)]} games and lies within {min(within):.2g}–{max(within):.2g}× of the fitted "
    assert claim + f"`B_crit` on {WORDS[n_within]} of them" in limits


def test_the_v7_verdict_and_its_errors(tmp_path, capsys):
    """``rl-gns validate-probes`` on the v7 probes, over the pairs v7 counts (timed by learning, not by the score's
    first window): unranked for want of games, and ``env_value`` (at the anchor) against the leave-one-game-out
    constant."""
    probes = sorted(p for p in (RESULTS / "probes_v7").iterdir() if p.is_dir() and p.name != "validation")
    status, stderr = rl_gns(capsys, "validate-probes", *probes, "--out", tmp_path)
    assert status == 0, stderr
    counted = (tmp_path / "probes.md").read_text().split("Without the", 1)[1]
    games = re.search(r"Not ranked: \d+ identified pairs from (\d) game\(s\); the criterion needs (\d) games", counted)
    assert games is not None
    errors = {name: float(value) for name, value in re.findall(r"^\| ([\w -]+) \| ([\d.]+) \|", counted, flags=re.M)}
    assert f"identified `B_crit` on {games[1]} games where a ranking needs {games[2]}" in docs_results()
    constant = f"the leave-one-game-out constant {errors['leave-one-game-out constant']:.3f},"
    assert constant in docs_results() and f"`env_value` {errors['anchor_env_value']:.3f} (Spearman" in docs_results()


def test_the_ppo_regimes_verdict_is_the_committed_r4_table(tmp_path, capsys):
    """Criterion v8's ppo regime, ranked on the ladder's R4: ``rl-gns table`` over the committed R4 rungs rewrites
    ``table_R4.md`` byte for byte, it names no winner, and the README and docs/results.md quote its errors."""
    rungs = sorted(d for d in (RESULTS / "table1").glob("*/R4") if (d / "sweep" / "results.json").is_file())
    status, stderr = rl_gns(capsys, "table", *rungs, "--out", tmp_path / "table.md")
    assert status == 0, stderr
    committed = (RESULTS / "table1" / "table_R4.md").read_text()
    assert (tmp_path / "table.md").read_text() == committed
    ppo = committed.split("### Regime `ppo`", 1)[1]
    pairs = re.match(r": (\d+) counted pairs from (\d) game", ppo)
    assert pairs is not None and int(pairs[2]) >= 3 and "No candidate beats both baselines" in ppo
    rows = {m[0]: (m[1], float(m[2])) for m in re.findall(r"^\| ([\w -]+?\w) \| ([\d.]+) \| \S+ \| ([\d.]+) \|", ppo, re.M)}
    error = {name: value for name, (value, _) in rows.items()}
    assert f"v8 ranks the constant 746 first (median |log10 error| {error['constant 746']}; `env_value` " in readme()
    assert f"{error['default_env_value']})" in readme()
    within = round(rows["constant 746"][1] * int(pairs[1]))
    assert (
        f"constant 746 fixed in advance has a median |log10 error| of {error['constant 746']} ({within} of {pairs[1]} "
        f"within 2×), the leave-one-game-out constant {error['leave-one-game-out constant']}, `env_value` "
        f"{error['default_env_value']}, `path_env_value` {error['path_env_value']}, `path_env_total` "
        f"{error['path_env_total']}, `start_env_value` {error['start_env_value']}; no candidate beats both baselines"
    ) in docs_results()


def docs_results() -> str:
    """docs/results.md as one line of text."""
    return one_line("docs/results.md")


def test_table_1_and_the_docs_qbert_numbers(tmp_path, capsys):
    """``rl-gns table`` on every analysed one-step game rewrites the committed ``table_R0.md`` byte for byte, and
    docs/results.md's experience to Qbert's first target at each size is its ``results.json``'s, rounded."""
    games = sorted(d for d in (RESULTS / "table1").glob("*/R0") if (d / "sweep" / "results.json").is_file())
    status, stderr = rl_gns(capsys, "table", *games, "--out", tmp_path / "table.md")
    assert status == 0, stderr
    assert (tmp_path / "table.md").read_text() == (RESULTS / "table1" / "table_R0.md").read_text()
    results = json.loads((RESULTS / "table1" / "Qbert" / "R0" / "sweep" / "results.json").read_text())
    first = results["targets"][0]
    experience = {size: f"{round(e, -3):,.0f}" for size, e in zip(first["rollout_size_K"], first["experience_K"], strict=True)}
    claim = f"({experience[40]}, {experience[80]}, {experience[160]} and {experience[320]} agent steps at 40, 80, 160 and 320)"
    assert claim in docs_results()
    assert f"({experience[640]} and {experience[1280]} agent steps, at the grid's highest rates)" in docs_results()


def test_the_validated_predictors_are_the_committed_criterion_winners():
    """envs/predictors.toml's one-step entry is what criterion v8's committed table decided: its winner (the default
    candidate, named ``default_<predictor>`` there) and the range of its ratios, which train and advise print; the
    README's answer quotes the same table."""
    decided = re.search(
        r"### Regime `one-step`.*?Winner: `default_([a-z_]+)`; its predicted / fitted B_crit spans ([0-9.]+)–([0-9.]+)",
        (RESULTS / "table1" / "table_R0.md").read_text(),
        re.DOTALL,
    )
    assert decided is not None
    validated = VALIDATED["one-step"]
    assert (validated.predictor, validated.error) == (decided[1], (float(decided[2]), float(decided[3])))
    one_step = (RESULTS / "table1" / "table_R0.md").read_text().split("### Regime `one-step`", 1)[1].split("###")[0]
    pairs = re.match(r": (\d+) counted pairs from (\d) game", one_step)
    assert pairs is not None
    errors = {name: value for name, value in re.findall(r"^\| ([\w -]+?\w) \| ([\d.]+) \|", one_step, flags=re.M)}
    claim = (
        f"`env_value` came within {decided[2]}–{decided[3]}× of the fitted `B_crit` at all {pairs[1]} targets (median "
        f"|log10 error| {errors['default_env_value']}), beating both constants fixed in advance "
        f"({errors['constant 450']} and {errors['leave-one-game-out constant']})"
    )
    assert claim in readme() and f"sweeps from scratch of {'three' if pairs[2] == '3' else pairs[2]} games" in readme()


def coverage_span(rows: list[dict], key: str) -> str:
    """``low–high`` of a column of simulated-probe rows, as percentages (``89–98``) or ratios (``0.74–1.26``)."""
    values = [row[key] for row in rows]
    if key.startswith(("covered", "identified")):
        return f"{min(values):.0%}–{max(values):.0%}".replace("%", "")
    return f"{min(values):.2f}–{max(values):.2f}"


def test_the_trend_measures_coverage_is_what_the_simulations_give():
    """docs/probe.md quotes the committed simulations of the steps measures (``python benchmarks/probe_coverage.py
    --curve C --scenarios ...``, one directory per curve): the trend measure's coverage over the straight and concave
    curves, over the convex one, and the first passage's; its median fitted / true ``B_crit`` over every curve."""
    tables = {c: json.loads((RESULTS / "validation" / "probe_coverage_trend" / c / "coverage.json").read_text()) for c in
              ("linear", "concave", "convex")}  # fmt: skip
    trend = {c: [r for r in t["rows"] if r["scenario"].endswith("trend")] for c, t in tables.items()}
    midpoint = [r for t in tables.values() for r in t["rows"] if r["scenario"] == "+ games, null floor"]
    every = [r for rows in trend.values() for r in rows]
    probe_md = one_line("docs/probe.md")
    straight = coverage_span(trend["linear"] + trend["concave"], "covered")
    assert f"covers the truth in {straight} % where the score rises along a straight line or a concave curve" in probe_md
    assert f"and in {coverage_span(trend['convex'], 'covered')} % along a convex one" in probe_md
    assert f"where `--steps midpoint` covers {coverage_span(midpoint, 'covered')} %" in probe_md
    assert f"its median fitted / true `B_crit` is {coverage_span(every, 'median_ratio')}" in probe_md


def test_the_trend_re_read_of_the_committed_probes():
    """docs/probe.md's count of safe targets each measure identifies, and the direction trend moves ``B_crit`` where
    both identify it, from ``benchmarks/reread_trend.py``'s table."""
    rows = [row for row in json.loads((RESULTS / "probes_reread" / "trend.json").read_text())["rows"] if row["safe"]]
    counts = {m: sum(bool(row["fits"][m] and row["fits"][m]["identified"]) for row in rows) for m in ("midpoint", "trend")}
    probe_md = one_line("docs/probe.md")
    claim = f"identifies fewer: {counts['trend']} of the {len(rows)} safe targets against {counts['midpoint']} with"
    assert counts["trend"] < counts["midpoint"] and claim in probe_md
    both = [row["fits"] for row in rows if all(row["fits"][m] and row["fits"][m]["identified"] for m in ("midpoint", "trend"))]
    assert both and all(fits["trend"]["b_crit"] < fits["midpoint"]["b_crit"] for fits in both)
    assert "it lowers `B_crit` where both identify it" in probe_md


def test_the_sequential_designs_simulated_cost_and_coverage():
    """docs/probe.md's table of the sequential design, each row from ``benchmarks/probe_sequential.py``'s committed
    table (the rate tuned in the first round, and one rate), and results.md's summary of both."""
    probe_md = (ROOT / "docs" / "probe.md").read_text()
    results_md = one_line("docs/results.md")
    for directory, label in (("probe_sequential", "3 rates, later seeds at the one kept (`--lr-points 3`)"),
                             ("probe_sequential_one_rate", "the rule's rate only (`--lr-points 1`)")):  # fmt: skip
        rows = json.loads((RESULTS / "validation" / directory / "sequential.json").read_text())["rows"]
        sequential, fixed = ([row[d] for row in rows] for d in ("sequential", "fixed"))
        branches = [row["median_branches"] for row in sequential]
        cost = coverage_span(rows, "median_cost_ratio")
        low, high = (float(x) * 32 for x in cost.split("–"))
        at_v7 = f"about {low:.0f}–{high:.0f}×" if low >= 10 else f"about {low:.1f}–{high:.0f}×"
        row = (
            f"| {label} | {min(branches):.0f}–{max(branches):.0f} | {cost} | {at_v7} | "
            f"{coverage_span(sequential, 'covered')} % | {coverage_span(sequential, 'identified')} % | "
            f"{coverage_span(fixed, 'covered')} % / {coverage_span(fixed, 'identified')} % |"
        )
        assert row in probe_md
        assert f"{cost} " in results_md and f"{coverage_span(sequential, 'covered')} %" in results_md


def test_the_cost_caps_simulated_identification_and_coverage():
    """docs/probe.md's case for the default cap of 10x and the criterion's note of 2026-12-06 (04:23 UTC), from the
    committed simulation at the real seeds' scatter (``benchmarks/probe_sequential.py --run-steps 1950000 --max-costs
    5 10 20``): how often each cap identifies B_crit, the 5x cap's coverage at B_crit 256, and the cost at 10x, which
    the rule's own end reaches first (the same probes as no cap)."""
    rows = json.loads((RESULTS / "validation" / "probe_sequential_capped" / "sequential.json").read_text())["rows"]
    at_5, at_10 = ([row["capped"][cap] for row in rows] for cap in ("5", "10"))
    assert all(row["capped"]["10"] == row["sequential"] for row in rows)
    run_steps = 1_950_000
    costs = [row["median_cost"] / run_steps for row in at_10]
    small = [row["capped"]["5"] for row in rows if row["b_crit"] == 256]
    text = {name: one_line(f"docs/{name}") for name in ("probe.md", "prediction-criterion.md")}
    assert (
        f"a cap of 5× identifies `B_crit` in {coverage_span(at_5, 'identified')} % of probes, and where `B_crit` is 256 "
        f"its interval covers the truth in only {coverage_span(small, 'covered')} %; at 10× the rule's own end (3 seeds "
        f"per size) comes first, and the probe identifies it in {coverage_span(at_10, 'identified')} % at a median "
        f"{min(costs):.1f}–{max(costs):.1f}× the run, its interval covering the truth in {coverage_span(at_10, 'covered')} %"
    ) in text["probe.md"]
    assert (
        f"({coverage_span(at_5, 'identified')} % against {coverage_span(at_10, 'identified')} %), and at `B_crit` 256 its "
        f"interval covers the truth in only {coverage_span(small, 'covered')} % of probes; a cap of 10× never binds "
        f"before the rule's end there, at a median {min(costs):.1f}–{max(costs):.1f}× the run"
    ) in text["prediction-criterion.md"]
    scattered = [row for row in rows if row["seed_sd"] == 1.2 and row["b_crit"] in (1024, 4096)]
    at_scatter = [row["capped"]["10"] for row in scattered]
    assert (
        f"(σ_seed 1.2: an observed scatter of {coverage_span(at_scatter, 'observed_sd')}) and `B_crit` is 1,024 or 4,096 "
        f"on a grid of 128–4,096, the probe bounds it from both sides in {coverage_span(at_scatter, 'identified')} %"
    ) in text["probe.md"]
    outcomes = (RESULTS / "probes_v8" / "outcomes" / "outcomes.md").read_text()
    pooled = re.search(r"pooled over \d+ reported probes: σ of ln S ([\d.]+) ", outcomes)
    assert pooled is not None
    results_md = one_line("docs/results.md")
    assert f"real branches show ({pooled.group(1)} in `ln S`, pooled over v8's probes)" in results_md


def test_the_count_of_v8_reports_that_note_sizes_slower_than_s_of_b_allows():
    """docs/probe.md counts the committed v8 reports (``rl-gns probe-report``) that carry the note on sizes that took
    more agent steps to the target than the size of least experience, among those that reported."""
    reports = [path.parent / "report.md" for path in (RESULTS / "probes_v8").glob("*/*/probe_results.json")]
    noted = sum("Note: the branches took more agent steps to the target" in path.read_text() for path in reports)
    probe_md = one_line("docs/probe.md")
    assert f"({WORDS[noted]} of v8's {WORDS[len(reports)]} reported probes)" in probe_md


def v8_record(probe: str) -> dict:
    """The report's record (``probe_results.json``) of one committed v8 probe, e.g. ``"Qbert/at1950k_censored_steps"``."""
    return json.loads((RESULTS / "probes_v8" / probe / "probe_results.json").read_text())


def interval(fit: dict) -> str:
    """A fit's ``B_crit`` and its 95 % interval as the docs print them: ``"2,101 [573, 5,423]"``."""
    return f"{fit['b_crit']:,.0f} [{fit['b_crit_low']:,.0f}, {fit['b_crit_high']:,.0f}]"


def docs_text() -> dict[str, str]:
    """docs/probe.md and docs/results.md, each as one line of text."""
    return {name: one_line(f"docs/{name}") for name in ("probe.md", "results.md")}


def test_the_second_fits_at_1950k_quoted_in_the_docs_are_the_committed_reports():
    """docs/probe.md and results.md quote the fit from the size of least experience up of the n_steps probes at 1.95M
    (``rl-gns probe-report``'s ``fit_from_least_experience``) and Qbert's ``B_simple`` (env_value) at its branch point."""
    docs = docs_text()
    qbert, pong = (v8_record(f"{game}/at1950k_censored_steps") for game in ("Qbert", "Pong"))
    first_fit = qbert["fit_from_least_experience"]["fit"]
    quoted = [interval(first_fit), interval(pong["fit_from_least_experience"]["fit"])]
    point, low, _ = qbert["noise_at_branch_point"]["envs/value"]
    assert f"Qbert at 1.95M with n_steps varied gives `B_crit` {quoted[0]} from 1,024 up" in docs["probe.md"]
    assert f"its `B_simple` at the branch point is {point:,.0f} (at least {low:,.0f})" in docs["probe.md"]
    assert f"Pong's n_steps probe there gives {quoted[1]} from 256 up" in docs["probe.md"]
    assert (f"Qbert's at {quoted[0]} (its `B_simple` at the branch point {point:,.0f}, at least {low:,.0f}) and "
            f"Pong's at {quoted[1]}") in docs["results.md"]  # fmt: skip
    # the retest of Qbert's, its second fit judged: both fits, its cost, and its ratio to the first probe's second fit
    retest = v8_record("Qbert/at1950k_censored_steps_retest")
    second = retest["fit_from_least_experience"]
    fit = second["fit"]
    ratio = fit["b_crit"] / first_fit["b_crit"]
    assert second["from_rollout_size"] == 4096 and fit["identified"] and fit["b_crit_low"] > 0
    assert (
        f"18 branches at {retest['cost_multiple']:.1f}× its run. Its fit over every size again bounds `B_crit` from "
        f"below only (at least {retest['fit']['b_crit_low']:,.0f}); its second fit, from 4,096 up"
    ) in docs["probe.md"]
    assert f"gives **{interval(fit)}**: {ratio:.1f}× the first probe's {first_fit['b_crit']:,.0f}" in docs["probe.md"]
    assert (f"its second fit from 4,096 up gives {interval(fit)}, {ratio:.1f}× the first probe's "
            f"{first_fit['b_crit']:,.0f}, the intervals overlapping") in docs["results.md"]  # fmt: skip
    # Alien's, the first whose branches all followed the second fit's note: its cost and both fits, neither bounded
    alien = v8_record("Alien/at1950k_censored_steps")
    second = alien["fit_from_least_experience"]
    assert not alien["fit"]["identified"] and not second["fit"]["identified"]
    assert second["fit"]["b_crit_low"] == 0 and second["fit"]["b_crit_high"] == float("inf")
    assert (
        f"18 branches in 4 rounds at {alien['cost_multiple']:.1f}× its run. Its fit over every size bounds `B_crit` from "
        f"below only (at least {alien['fit']['b_crit_low']:,.0f}), and its second fit, from "
        f"{second['from_rollout_size']:,} up, **on neither side**"
    ) in docs["probe.md"]
    assert (
        f"(at least {alien['fit']['b_crit_low']:,.0f}) and on neither side by its second fit, from "
        f"{second['from_rollout_size']:,} up, after 18 branches at {alien['cost_multiple']:.1f}× its run"
    ) in docs["results.md"]


def test_breakouts_probes_quoted_in_the_docs_are_the_committed_reports():
    """Breakout, the game never probed before: at 1M its fit bounded below and its second fit above only (``E_min`` at
    0); at 1.25M the fit over every size bounded above, with its ``B_simple`` (env_value) at the branch point."""
    docs = docs_text()
    breakout = v8_record("Breakout/at1000k_censored_steps")
    second = breakout["fit_from_least_experience"]
    assert second["fit"]["e_min"] == 0 and not second["fit"]["identified"]
    assert (
        f"15 branches in 3 rounds at {breakout['cost_multiple']:.1f}× its run. Its fit bounds `B_crit` from below only "
        f"(at least {breakout['fit']['b_crit_low']:,.0f}); its second fit, from {second['from_rollout_size']:,} up, puts "
        f"`E_min` at 0 and `B_crit` at most {second['fit']['b_crit_high']:,.0f}"
    ) in docs["probe.md"]
    later = v8_record("Breakout/at1250k_censored_steps")
    point, low, high = later["noise_at_branch_point"]["envs/value"]
    assert later["fit"]["identified"] and later["fit_from_least_experience"]["same_as_fit"]
    quoted = interval(later["fit"])
    assert f"at {later['cost_multiple']:.1f}× its run: `B_crit` **{quoted}**, bounded above only" in docs["probe.md"]
    assert f"**identifies `B_crit` at {quoted}** agent steps" in docs["results.md"]
    assert f"its `B_simple` there {point:,.0f} [{low:,.0f}, {high:,.0f}]" in docs["results.md"]


def test_qberts_probe_at_1500k_quoted_in_the_docs_is_the_committed_report():
    """Qbert at its second stage, 1.5M: bounded below by the fit over every size, on neither side by the second fit."""
    qbert = v8_record("Qbert/at1500k_censored_steps")
    second = qbert["fit_from_least_experience"]
    assert not qbert["fit"]["identified"] and second["fit"]["b_crit_high"] == float("inf")
    (p_null,) = qbert["false_crossing"]
    assert (
        f"target {qbert['targets'][0]:,.1f} (`p_null` {p_null:.2g}), 18 branches in 4 rounds at "
        f"{qbert['cost_multiple']:.1f}× its run. Its fit bounds `B_crit` from below only (at least "
        f"{qbert['fit']['b_crit_low']:,.0f}), and its second fit, from {second['from_rollout_size']:,} up, on neither side"
    ) in docs_text()["probe.md"]


def test_pongs_n_steps_probe_at_500k_quoted_in_the_docs_is_the_committed_report():
    """Pong at 500k, the first n_steps probe whose fit over every size bounds ``B_crit`` from both sides: both fits, its
    target and cost, and its ``B_simple`` at the branch point by the policy loss and the value loss (env scheme)."""
    docs = docs_text()
    pong = v8_record("Pong/at500k_censored_steps")
    fit, second = pong["fit"], pong["fit_from_least_experience"]
    assert fit["identified"] and fit["b_crit_low"] > 0 and fit["b_crit_high"] < float("inf")
    policy, (_, value_low, value_high) = (pong["noise_at_branch_point"][f"envs/{loss}"] for loss in ("policy", "value"))
    simple = f"{policy[0]:,.0f} [{policy[1]:,.0f}, {policy[2]:,.0f}] by the policy loss"
    assert value_high == float("inf")
    target = f"{pong['targets'][0]:.1f}".replace("-", "−")  # the docs print a minus sign
    assert (
        f"target {target} (`p_null` {pong['false_crossing'][0]:.2g}), 15 branches in 3 rounds at "
        f"{pong['cost_multiple']:.1f}× its run: `B_crit` **{interval(fit)}**"
    ) in docs["probe.md"]
    assert f"its second fit, from {second['from_rollout_size']:,} up, gives {interval(second['fit'])}" in docs["probe.md"]
    assert f"{simple} (env scheme) and has no upper end by the value loss (at least {value_low:,.0f})" in docs["probe.md"]
    assert f"**bounds `B_crit` from both sides, {interval(fit)}**" in docs["results.md"]
    assert (
        f"from {second['from_rollout_size']:,} up (no seed at 64 reached the target), gives {interval(second['fit'])}"
    ) in docs["results.md"]
    assert (
        f"(15 branches, {pong['cost_multiple']:.1f}× its run; its `B_simple` there {simple}, at least {value_low:,.0f}"
    ) in docs["results.md"]
    # its retest with disjoint seeds: bounded on both sides again, its second fit the fit itself
    retest = v8_record("Pong/at500k_censored_steps_retest")
    assert (
        retest["fit"]["identified"] and retest["fit"]["b_crit_low"] > 0 and retest["fit_from_least_experience"]["same_as_fit"]
    )
    ratio = retest["fit"]["b_crit"] / fit["b_crit"]
    apart = retest["fit"]["b_crit"] / second["fit"]["b_crit"]
    target = f"{retest['targets'][0]:.1f}".replace("-", "−")
    assert (
        f"target {target} (`p_null` {retest['false_crossing'][0]:.2g}), 10 branches in 4 rounds at "
        f"{retest['cost_multiple']:.1f}× its run, stopped once its interval lay within 8×: `B_crit` "
        f"**{interval(retest['fit'])}**, {ratio:.2f}× the first probe's, the intervals overlapping"
    ) in docs["probe.md"]
    seconds = f"{second['fit']['b_crit']:,.0f} and {retest['fit']['b_crit']:,.0f}"
    assert f"the second fits of the pair ({seconds}) lie {apart:.1f}× apart" in docs["probe.md"]
    assert (
        f"**bounds it from both sides again, {interval(retest['fit'])}**, {ratio:.2f}× the first, the intervals "
        f"overlapping ({retest['fit']['n_points']} branches, {retest['cost_multiple']:.1f}× its run;"
    ) in docs["results.md"]


def test_the_n_steps_designs_outcomes_quoted_in_the_docs():
    """docs/probe.md, results.md and the README quote the n_steps design's line of the committed outcomes
    (``python benchmarks/probe_outcomes.py results/probes_v8 --out results/probes_v8/outcomes``): how many probes
    reported, at which stages, their median cost and range, and how many each fit identifies."""
    design = "censored fit, 1 largest sizes held back"
    design_envs = "sequential, 1 rate per size, lowest target, censored fit"
    outcomes = (RESULTS / "probes_v8" / "outcomes" / "outcomes.md").read_text()
    line = re.search(
        rf"{design}: (\d+) reported, cost a median ([\d.]+)× \(([\d.]+)–([\d.]+)×\), "
        r"`B_crit` identified in (\d+) of \d+ \((\d+) with a lower end above 0\); the fit from the size of least "
        r"experience up identifies it in (\d+) of \d+ \((\d+) with a lower end above 0\)",
        outcomes,
    )
    assert line is not None
    n, median, low, high, fit, fit_both, second, both = line.groups()
    record = json.loads((RESULTS / "probes_v8" / "outcomes" / "outcomes.json").read_text())
    rows = [row for row in record["probes"] if row["status"] == "reported" and row["design"].endswith(design)]
    assert len(rows) == int(n)
    at = sorted(row["branch_point"] for row in rows)
    stages = f"{at[0] / 1e6:.3g}M–{at[-1] / 1e6:.3g}M"
    games = len({Path(row["probe"]).parent.name for row in rows})
    both_sides = sorted(Path(row["probe"]).name for row in rows if row["identified"] and row["b_crit_low"] > 0)
    assert both_sides == ["at500k_censored_steps", "at500k_censored_steps_retest"]  # Pong at 500k and its retest
    docs, text = docs_text(), readme()
    assert (
        f"at {stages}, {n} probes cost a median {median}× the run ({low}–{high}×), every target's false-crossing rate at most "
    ) in docs["probe.md"]
    assert (
        f"the fit over every size identifies `B_crit` in {fit} of {n} (bounded from both sides in {fit_both}, Pong's pair "
        f"at 500k), the fit from the size of least experience up in {second} of {n}, bounded from both sides in {both}"
    ) in docs["probe.md"]
    assert (
        f"Over the {n} n_steps probes ({games} games, {stages}) the design costs a median {median}× the run ({low}–{high}×); "
        f"the fit over every size identifies `B_crit` in {fit} of {n} (both sides in {fit_both}, Pong's pair at 500k), "
        f"the second fit in {second} of {n} (both sides in {both}, Qbert's pair and Pong's retest)"
    ) in docs["results.md"]
    # the default design, the env count varied at the run's n_steps: each reported probe bounded from below only
    envs = [row for row in record["probes"] if row["status"] == "reported" and row["design"] == design_envs]
    below = sum(
        row["b_crit_low"] > 0 and row["b_crit_high"] == float("inf") and not row["upper"]["identified"] for row in envs
    )
    assert (
        f"its default, varying the env count, bounded `B_crit` from below only ({below} of {len(envs)}); varying n_steps "
        f"({n}, on {games} Atari games) it cost a median {median}× the run and bounded it from both sides in {fit_both} (Pong "
        f"at 500k and its retest), and from above in {second} (both sides in {both}) by a second fit that leaves out "
        "small rollouts slower than `S(B)` allows."
    ) in text


def test_the_second_fits_simulated_coverage_is_the_committed_simulation():
    """docs/probe.md's coverage of the fit over every size and of the second fit, with the small sizes slowed and
    without (``python benchmarks/probe_coverage.py ... --slow-below 1024 --slow-power 1.5``, and the same without)."""
    validation = RESULTS / "validation"
    slow, plain = (json.loads((validation / name / "coverage.json").read_text())["rows"]
                   for name in ("probe_coverage_slow", "probe_coverage_second"))  # fmt: skip
    inside = [row for row in slow if row["b_crit"] == 256]
    probe_md = one_line("docs/probe.md")
    assert (
        f"the fit over every size covers the true `B_crit` in only {coverage_span(slow, 'covered')} % of probes and "
        f"the second fit in {coverage_span(slow, 'covered_second')} %, identifying it in "
        f"{coverage_span(slow, 'identified_second')} % (at `B_crit` 256, inside the slowed sizes, its median is "
        f"{min(row['median_ratio_second'] for row in inside):.1f}–{max(row['median_ratio_second'] for row in inside):.1f}"
        f"× the truth); where nothing is slowed, the two agree (the first covers it in {coverage_span(plain, 'covered')} "
        f"%, the second in {coverage_span(plain, 'covered_second')} %)"
    ) in probe_md


def test_a_probes_cost_is_the_committed_v7_median():
    """The README's cost of a probe: the median multiple of the v7 rows of results/probes_reread/costs.md
    (``python benchmarks/probe_costs.py results/probes_v6 results/probes_v7``)."""
    costs = (RESULTS / "probes_reread" / "costs.md").read_text()
    multiples = [float(x) for x in re.findall(r"^\| results/probes_v7/\S+ \|.*\| ([\d.]+)x \|$", costs, re.M)]
    assert len(multiples) == 10 and f"(v7's probes: a median {statistics.median(multiples):.0f}×)" in readme()


def test_the_censored_fits_simulated_identification_and_coverage():
    """docs/probe.md's and results.md's numbers for ``--censored``, from the committed simulations
    (``benchmarks/probe_coverage.py`` and ``benchmarks/probe_sequential.py`` at a budget of 600,000, with and without
    ``--censored``; the sequential one also at ``--level 0.99``); the README's coverage of the probe's defaults (the
    sequential design at one rate, censored)."""
    validation = RESULTS / "validation"
    probe_md = one_line("docs/probe.md")
    results_md = one_line("docs/results.md")
    cover = {name: json.loads((validation / "probe_coverage_censored" / name / "coverage.json").read_text())["rows"]
             for name in ("reached", "censored")}  # fmt: skip
    assert (
        f"identifies `B_crit` in {coverage_span(cover['censored'], 'identified')} % of probes against "
        f"{coverage_span(cover['reached'], 'identified')} % without, and covers it in "
        f"{coverage_span(cover['censored'], 'covered')} % against {coverage_span(cover['reached'], 'covered')} %"
    ) in probe_md
    runs = {name: json.loads((validation / "probe_sequential_censored" / name / "sequential.json").read_text())["rows"]
            for name in ("reached", "censored", "censored_99")}  # fmt: skip
    seq = {name: [row["sequential"] for row in rows] for name, rows in runs.items()}
    assert (
        f"`B_crit` in {coverage_span(seq['censored'], 'identified')} % of probes against "
        f"{coverage_span(seq['reached'], 'identified')} %, at {coverage_span(runs['censored'], 'median_cost_ratio')} of "
        f"the fixed design's cost against {coverage_span(runs['reached'], 'median_cost_ratio')}, and covers it in "
        f"{coverage_span(seq['censored'], 'covered')} % against {coverage_span(seq['reached'], 'covered')} %"
    ) in probe_md
    assert (
        f"covers {coverage_span(seq['censored_99'], 'covered')} % and still identifies `B_crit` in "
        f"{coverage_span(seq['censored_99'], 'identified')} % of sequential probes"
    ) in probe_md
    assert (
        f"identifies it in {coverage_span(seq['censored'], 'identified')} % of sequential probes against "
        f"{coverage_span(seq['reached'], 'identified')} %, covering it in {coverage_span(seq['censored'], 'covered')} %"
    ) in results_md
    assert f"covered the true `B_crit` in {coverage_span(seq['censored'], 'covered')} % of cases" in readme()


def test_the_censored_fit_replayed_and_re_read_on_the_committed_probes():
    """docs/probe.md's cost and identification of one rate, the lowest target and the censored fit, replayed on the v6
    and v7 probes (``benchmarks/probe_replay.py``'s table), and its count of targets identified on every committed
    probe's branches (``benchmarks/reread_censored.py``'s)."""
    probe_md = one_line("docs/probe.md")
    replay = (RESULTS / "validation" / "probe_replay" / "replay.md").read_text()
    row = re.search(r"^\| one rate, low target, censored \| ([\d.]+)x \([^)]*\) \| \d+% \| (\d+)% \|", replay, re.M)
    assert row is not None
    assert f"fit cost a median {row[1]}× the run and identify `B_crit` in {row[2]} % of replays" in probe_md
    rows = json.loads((RESULTS / "validation" / "reread_censored" / "censored.json").read_text())["rows"]
    plain, censored = (sum(r["identified"][k] for r in rows) for k in (0, 1))
    assert f"`B_crit` at {censored} of {len(rows)} targets against {plain}" in probe_md


def test_the_ladders_ratios_in_docs_are_the_committed_ladder_tables(tmp_path, capsys):
    """docs/results.md's ladder sentence: ``env_value`` over the fitted ``B_crit`` per rung, as ``rl-gns table`` writes
    it over the committed rungs (results/table1/ladder.md, rewritten here byte for byte)."""
    table1 = RESULTS / "table1"
    rungs = [
        d
        for d in sorted(table1.glob("*/R[0-4]"))
        if (d / "targets.json").is_file() and (d / "sweep" / "results.json").is_file()
    ]
    status, err = rl_gns(capsys, "table", *rungs, "--out", tmp_path / "ladder.md")
    assert status == 0, err
    assert (tmp_path / "ladder.md").read_text() == (table1 / "ladder.md").read_text()
    row = next(line for line in (table1 / "ladder.md").read_text().splitlines() if line.startswith("| default_env_value |"))
    header = next(line for line in (table1 / "ladder.md").read_text().splitlines() if line.startswith("| candidate |"))
    rungs = [re.fullmatch(r"(R\d) \((\d+) pairs\)", cell.strip()).groups() for cell in header.split("|")[2:-1]]
    cells = [re.fullmatch(r"(\S+) \((\S+)–(\S+)\)", cell.strip()).groups() for cell in row.split("|")[2:-1]]
    docs = one_line("docs/results.md")
    for (rung, pairs), (middle, low, high) in zip(rungs, cells, strict=True):
        said = f"{float(middle):.2f}× ({float(low):.2f}–{float(high):.2f}) at {rung} ({pairs} pairs"
        assert said in docs, said


def test_the_readmes_ladder_ranges_are_the_committed_rungs_past_one_step():
    """The README's ``env_value`` / ``B_crit`` on the ladder: per game, the range over every target of its rungs past
    one step, R1–R4 on Breakout and Seaquest, R4 on Beam Rider (each ``results.json`` that ``rl-gns analyze`` wrote,
    ``bash results/table1/protocol.sh GAME Rk``)."""
    for game, name, rungs in (("Breakout", "Breakout", 4), ("Seaquest", "Seaquest", 4), ("BeamRider", "Beam Rider", 1)):
        analysed = [RESULTS / "table1" / game / rung / "sweep" / "results.json" for rung in ("R1", "R2", "R3", "R4")]
        ratios = [
            entry["candidates"]["env_value"]["value"] / entry["b_crit"]
            for results in analysed
            if results.is_file()
            for entry in json.loads(results.read_text())["targets"]
        ]
        assert len(ratios) == 2 * rungs
        assert f"{min(ratios):.2f}–{max(ratios):.2f}× on {name}" in readme(), game


def test_the_four_probes_of_pongs_snapshot_at_500k_share_the_quoted_range():
    """results.md: v6's and v7's probes at their safe targets and v8's n_steps probe and its retest all branch from the
    same agent of Pong's trunk (one ``model_sha256``), and their intervals for ``B_crit`` share the range it quotes."""
    records = [
        json.loads((RESULTS / version / "Pong" / "at500k" / "probe_results.json").read_text())
        for version in ("probes_v6", "probes_v7")
    ] + [v8_record(f"Pong/at500k_{name}") for name in ("censored_steps", "censored_steps_retest")]
    assert len({record["model_sha256"] for record in records}) == 1
    low, high = max(r["fit"]["b_crit_low"] for r in records), min(r["fit"]["b_crit_high"] for r in records)
    quoted = " and ".join(f"{interval(r['fit'])} ({v})" for r, v in zip(records[:2], ("v6", "v7"), strict=True))
    results_md = docs_text()["results.md"]
    assert f"gave {quoted}: the four intervals share {low:,.0f}–{high:,.0f}." in results_md


def test_pongs_n_steps_probe_at_1000k_quoted_in_the_docs_is_the_committed_report():
    """Pong at 1M: bounded from below only by the fit over every size; its second fit not fitted (too few reached)."""
    pong = v8_record("Pong/at1000k_censored_steps")
    fit, second = pong["fit"], pong["fit_from_least_experience"]
    assert not fit["identified"] and second["fit"] is None
    target = f"{pong['targets'][0]:.2f}".replace("-", "−")
    docs = docs_text()
    assert (
        f"target {target} (`p_null` {pong['false_crossing'][0]:.2g}), 18 branches in 5 rounds at "
        f"{pong['cost_multiple']:.1f}× its run. Its fit bounds `B_crit` from below only (at least {fit['b_crit_low']:,.0f}), "
        f"and its second fit, from {second['from_rollout_size']:,} up, is not fitted"
    ) in docs["probe.md"]
    assert (
        f"bounds `B_crit` from below only (at least {fit['b_crit_low']:,.0f}; 18 branches, {pong['cost_multiple']:.1f}×"
        in (docs["results.md"])
    )


def test_breakout_at_500k_where_no_branch_reached_its_pilots_target_as_the_docs_say():
    """docs/probe.md, results.md and limits.md on Breakout at 500k with n_steps varied: its target, null floor and
    pilot's best, its 15 branches and cost, and the best running scores of the seeds at the pilot's own rollout size
    and learning rate, from the committed report, its record and the pilot's config."""
    probe = RESULTS / "probes_v8" / "Breakout" / "at500k_censored_steps"
    record = v8_record("Breakout/at500k_censored_steps")
    assert record["reached"] == [] and record["fit"] is None
    pilot = json.loads((probe / "pilot" / "config.json").read_text())
    size, rate = pilot["n_envs"] * pilot["n_steps"], pilot["learning_rate"]
    rows = re.findall(rf"^\| {size:,} \| {rate:g} \| \d+ \| ([\d.]+) \| no \|$", (probe / "report.md").read_text(), re.M)
    best = sorted(float(score) for score in rows)
    target, floor, multiple = record["targets"][0], record["null_floor"], record["cost_multiple"]
    assert abs(target - (floor + (record["pilot_best"] - floor) / 3)) < 1e-9
    assert (
        f"the pilot's best was {record['pilot_best']:.1f} and the target {target:.1f}, a third of the way up from the null "
        f"floor of {floor:.1f}; none of the {record['branches']} branches reached it, not even the {len(best)} at the "
        f"pilot's own rollout size and learning rate (best {best[0]:.1f}–{best[-1]:.1f}), and the probe spent "
        f"{multiple:.1f}× its run"
    ) in docs_text()["probe.md"]
    assert (
        f"none of its {record['branches']} branches reached, not even the {len(best)} at the pilot's own settings "
        f"({multiple:.1f}× its run" in docs_text()["results.md"]
    )
    assert f"(Breakout at 500k: {record['branches']} branches, {multiple:.1f}× the run, none)" in one_line("docs/limits.md")


def test_the_probes_without_a_target_counted_in_the_docs():
    """docs/probe.md counts the points where the n_steps design's pilot passed no null floor, and docs/limits.md those
    of every v8 probe, with their costs, from the committed outcomes."""
    record = json.loads((RESULTS / "probes_v8" / "outcomes" / "outcomes.json").read_text())
    none = [row for row in record["probes"] if row["status"] == "no target"]
    steps = [row["multiple"] for row in none if row["design"].endswith("censored fit, 1 largest sizes held back")]
    assert (
        f"At {len(steps)} more points (Qbert and Ms. Pac-Man at 500k and 1M, Alien at 500k, Breakout at 1.95M) the pilot "
        f"passed no null floor: no target, for {min(steps):.1f}–{max(steps):.1f}× the run each."
    ) in docs_text()["probe.md"]
    multiples = [row["multiple"] for row in none]
    assert (
        f"{len(none)} of the {len(record['probes'])} probes v8 started had no target (the pilot passed no null floor or, "
        "under the gate on its gain, gained too little), "
        f"each for {min(multiples):.1f}–{max(multiples):.1f}× the run"
    ) in one_line("docs/limits.md")


def test_the_stop_for_futility_replayed_on_the_n_steps_probes_as_the_docs_say():
    """docs/probe.md's rule 6 and limits.md on ``--least-sizes``: the medians of the replayed rules, the two probes
    that stop after their first round and their costs, and the retest's interval under a stop at a round with none,
    from the committed replay (``benchmarks/replay_rounds.py``)."""
    rows = json.loads((RESULTS / "validation" / "replay_rounds" / "rounds.json").read_text())["rows"]

    def median(rule: str) -> float:
        return statistics.median(row["cost"] for row in rows if row["rule"] == rule)

    def row(probe: str, rule: str) -> dict:
        return next(r for r in rows if r["probe"] == f"results/probes_v8/{probe}" and r["rule"] == rule)

    stopped = [r for r in rows if r["rule"] == "fewer than 2 sizes" and len(set(r["rounds"].split(" of "))) == 2]
    assert sorted(Path(r["probe"]).relative_to("results/probes_v8").as_posix() for r in stopped) == [
        "Breakout/at500k_censored_steps", "Pong/at1000k_censored_steps"
    ] and all(r["rounds"].startswith("1 of") for r in stopped)  # fmt: skip
    breakout, pong = row("Breakout/at500k_censored_steps", "fewer than 2 sizes"), row("Pong/at1000k_censored_steps",
                                                                                     "fewer than 2 sizes")  # fmt: skip
    for rule in ("as run", "fewer than 2 sizes", "fewer than 3 sizes"):
        mine = [r for r in rows if r["rule"] == rule]
        assert len(mine) == 12 and sum(r["identified"] for r in mine) == 3 and sum(r["second_identified"] for r in mine) == 6
    text = docs_text()["probe.md"]
    assert (
        f"`--least-sizes 2` stops those two after their first round ({breakout['cost']:.1f}× and {pong['cost']:.1f}×), "
        f"moves the median cost from {median('as run'):.2f}× to {median('fewer than 2 sizes'):.2f}× the run, and changes "
        "no fit that identified `B_crit` (3 of 12, and 6 of 12 by the second fit, either way); `L` 3 stops Breakout at 1M "
        f"as well (median {median('fewer than 3 sizes'):.2f}×)"
    ) in text
    assert row("Breakout/at1000k_censored_steps", "fewer than 3 sizes")["rounds"].startswith("1 of")
    retest = "Pong/at500k_censored_steps_retest"
    assert (
        f"widening its interval from {row(retest, 'as run')['b_crit'].split(' ', 1)[1]} to "
        f"{row(retest, 'a round with none')['b_crit'].split(' ', 1)[1]}"
    ) in text
    assert f"would have stopped it after its first round, at {breakout['cost']:.1f}×" in one_line("docs/limits.md")


def test_the_stop_for_futility_simulated_as_the_docs_say():
    """docs/probe.md's rule 6 on the simulated probes: identification, coverage and median cost with and without
    ``--least-sizes 2`` at both run lengths, ranges over the 9 cases of each committed table."""
    text = docs_text()["probe.md"]

    def ranges(name: str) -> dict[str, tuple[str, str]]:
        record = json.loads((RESULTS / "validation" / name / "sequential.json").read_text())
        run, rows = record["args"]["run_steps"], record["rows"]
        designs = {"without": [row["sequential"] for row in rows], "with": [row["futile"]["2"] for row in rows]}

        def span(values: list[float], unit: str = "") -> str:
            return f"{min(values):.2f}–{max(values):.2f}" if not unit else f"{min(values):.1f}–{max(values):.1f}×"

        found = {}
        for design, summaries in designs.items():
            found[f"identified {design}"] = span([s["identified"] for s in summaries])
            found[f"covered {design}"] = span([s["covered"] for s in summaries])
            found[f"cost {design}"] = span([s["median_cost"] / run for s in summaries], "x")
        found["saved"] = (
            f"{max(a['median_cost'] - b['median_cost'] for a, b in zip(*designs.values(), strict=True)) / run:.1f}×"
        )
        return found

    long, short = ranges("probe_sequential_futile"), ranges("probe_sequential_futile_500k")
    assert (
        f"identification {long['identified with']} of probes against {long['identified without']} without, coverage "
        f"{long['covered with']} against {long['covered without']}, the median cost at most {long['saved']} the run lower"
    ) in text
    assert (
        f"it cuts the median cost from {short['cost without']} the run to {short['cost with']}, but identifies `B_crit` "
        f"less often ({short['identified with']} of probes against {short['identified without']}) and its interval "
        f"covers the truth far less often ({short['covered with']} against {short['covered without']})"
    ) in text
    covered = json.loads((RESULTS / "validation" / "probe_sequential_futile_500k" / "sequential.json").read_text())
    assert f"in as few as {min(row['sequential']['covered'] for row in covered['rows']):.2f} of probes" in text


def test_breakout_at_250k_stopped_for_futility_as_the_docs_say():
    """results.md and limits.md on Breakout at 250k, probed with ``--least-sizes 2``: its target, floor and pilot's
    best, its first round's best running scores, why it stopped and its cost, from the committed record and report."""
    probe = RESULTS / "probes_v8" / "Breakout" / "at250k_censored_steps_least2"
    record = v8_record("Breakout/at250k_censored_steps_least2")
    assert record["least_sizes"] == 2 and record["reached"] == [] and len(record["rounds"]) == 1
    assert record["stopped"].endswith("0 of the 5 rollout sizes trained reached the target, fewer than --least-sizes 2")
    best = [
        float(s)
        for s in re.findall(r"^\| [\d,]+ \| [\d.e-]+ \| \d+ \| ([\d.]+) \| no \|$", (probe / "report.md").read_text(), re.M)
    ]
    assert len(best) == record["branches"] == 5
    assert (
        f"its target {record['targets'][0]:.2f} over a floor of {record['null_floor']:.2f} (pilot {record['pilot_best']:.2f}) "
        f"was reached by none of its first round's {record['branches']} branches (best {min(best):.1f}–{max(best):.1f}), "
        f"and it stopped there, at {record['cost_multiple']:.1f}× its run"
    ) in docs_text()["results.md"]
    assert (
        "tried on Breakout at 250k, it stopped there after one round that reached its target at no size, at "
        f"{record['cost_multiple']:.1f}×"
    ) in one_line("docs/limits.md")


def test_the_gate_on_the_pilots_gain_re_read_as_the_docs_say():
    """docs/probe.md on ``--least-pilot-gain``: Breakout at 500k's pilot gain and means, the n_steps probes a gate at 3
    ends (their gains and costs) and the median cost it leaves, the gains of those that identified ``B_crit``, and Ms.
    Pac-Man at 1M's, from the committed re-read (``benchmarks/pilot_gain.py``)."""
    rows = {r["probe"].removeprefix("results/probes_v8/"): r
            for r in json.loads((RESULTS / "validation" / "pilot_gain" / "gain.json").read_text())["rows"]}  # fmt: skip
    steps = {
        name: r
        for name, r in rows.items()
        if r["reported"] and r["design"].endswith("censored fit, 1 largest sizes held back")
    }
    assert len(steps) == 12
    gated = {name: r for name, r in steps.items() if r["pilot_gain"] < 3}
    assert sorted(gated) == [
        "Alien/at1950k_censored_steps", "Breakout/at500k_censored_steps", "Pong/at1000k_censored_steps",
        "Qbert/at1500k_censored_steps",
    ] and not any(r["identified"] for r in gated.values())  # fmt: skip
    gains, costs = [r["pilot_gain"] for r in gated.values()], [r["cost"] for r in gated.values()]
    after = statistics.median(r["cost_before_branches"] if name in gated else r["cost"] for name, r in steps.items())
    found = [r["pilot_gain"] for r in steps.values() if r["identified"]]
    breakout = RESULTS / "probes_v8" / "Breakout" / "at500k_censored_steps"
    anchor = statistics.mean(float(s) for s in RunDir(breakout / "anchor").episodes()["score"])
    pilot = list(RunDir(breakout / "pilot").episodes()["score"])
    text = docs_text()["probe.md"]
    assert (
        f"Breakout at 500k's pilot passed the floor with a gain of {rows['Breakout/at500k_censored_steps']['pilot_gain']:.1f} "
        f"standard errors (its mean did not rise: anchor {anchor:.1f}, the pilot's later games "
        f"{statistics.mean(pilot[len(pilot) // 2 :]):.1f})"
    ) in text
    assert (
        f"gains {min(gains):.1f}–{max(gains):.1f}, none of which identified `B_crit`, at {min(costs):.1f}–{max(costs):.1f}× "
        f"each), moving its median cost from {statistics.median(r['cost'] for r in steps.values()):.2f}× to {after:.2f}× "
        f"the run; the {len(found)} that identified `B_crit` gained {min(found):.1f}–{max(found):.1f}"
    ) in text
    assert f"Breakout at 250k (gain {rows['Breakout/at250k_censored_steps_least2']['pilot_gain']:.1f})" in text
    mspacman = rows["MsPacman/at1000k_censored_steps"]
    assert not mspacman["passed_floor"] and f"Ms. Pac-Man at 1M's pilot gained {mspacman['pilot_gain']:.1f}" in text


def test_the_fresh_pong_trunks_gated_probe_as_the_docs_say():
    """results.md on the fresh Pong trunk's probe at 500k: the pilot's best, the target and floor, the best running
    score of the branch at the pilot's own settings, and its cost, from the committed record, report and pilot config;
    the gate let it through and the stop for futility ended it."""
    probe = RESULTS / "probes_v8" / "Pong" / "at500k_censored_steps_gated"
    record = v8_record("Pong/at500k_censored_steps_gated")
    assert record["least_pilot_gain"] == 3 and record["pilot_gain"] >= 3 and record["least_sizes"] == 2
    assert record["reached"] == [] and record["stopped"].endswith("fewer than --least-sizes 2")
    pilot = json.loads((probe / "pilot" / "config.json").read_text())
    size, rate = pilot["n_envs"] * pilot["n_steps"], pilot["learning_rate"]
    own = re.findall(rf"^\| {size:,} \| {rate:g} \| \d+ \| (-?[\d.]+) \| no \|$", (probe / "report.md").read_text(), re.M)
    assert (
        f"its pilot gained (best {record['pilot_best']:.2f}, target {record['targets'][0]:.2f} over a floor of "
        f"{record['null_floor']:.1f}), but the first round's {record['branches']} branches reached the target at no size "
        f"({float(own[0]):.1f} at the pilot's own settings), and the probe stopped at {record['cost_multiple']:.1f}× its run"
    ) in docs_text()["results.md"].replace("−", "-")


def test_the_gated_designs_fresh_probes_counted_in_the_docs():
    """docs/probe.md and the criterion's outcome count the gated design's probes of fresh trunks (every probe whose
    design stops below 2 sizes at the target and gates the pilot's gain, from the committed outcomes): how many it
    started and how many ended without a target, its median cost over all of them, and how often each fit identified
    `B_crit`."""
    record = json.loads((RESULTS / "probes_v8" / "outcomes" / "outcomes.json").read_text())
    gated = [row for row in record["probes"] if row["design"].endswith("pilot gain at least 3 SE")]
    reported = [row for row in gated if row["status"] == "reported"]
    assert len(reported) + sum(row["status"] == "no target" for row in gated) == len(gated)  # none unfinished
    costs = [row["multiple"] for row in gated]
    fit = [row for row in reported if row["identified"]]
    bounded = sum(row["b_crit_low"] > 0 for row in fit)
    second = sum(row["upper"]["identified"] for row in reported)
    claim = (
        f"the gated design started {len(gated)} probes: {len(gated) - len(reported)} ended without a target, and over "
        f"all {len(gated)} it cost a median {statistics.median(costs):.1f}× the run ({min(costs):.1f}–{max(costs):.1f}×); "
        f"the fit over every size identified `B_crit` in {len(fit)} of {len(gated)} ({bounded} with a lower end above 0), "
        f"the fit from the size of least experience up in {second} of {len(gated)}"
    )
    assert claim in docs_text()["probe.md"]
    assert claim in one_line("docs/prediction-criterion.md")


def test_the_pilots_replicas_counted_in_the_docs():
    """docs/probe.md counts the branches at a pilot's own settings that reached the target its best set, from the
    committed re-read (``benchmarks/pilot_replicas.py``)."""
    rows = json.loads((RESULTS / "validation" / "pilot_replicas" / "replicas.json").read_text())["rows"]
    reached = [sum(rep["reached"] for rep in row["replicas"]) for row in rows]
    total = [len(row["replicas"]) for row in rows]
    assert (
        f"of the {sum(total)} branches at the pilot's own env count, n_steps and learning rate (its replicas, which "
        f"differ from it in seed alone), {sum(reached)} reached the target; in {sum(k == 0 for k in reached)} of "
        f"{len(rows)} probes none did"
    ) in docs_text()["probe.md"]
