"""The console line of ``rl-gns train``: at most one a second, always the last, the latest noise scale on it."""

import io

from rl_gns.experiments.console import ConsoleLine

KEY = "gns/envs/b_simple_value_avg"


def test_lines_are_throttled_and_keep_the_latest_noise_scale():
    times = iter([0.0, 0.2, 0.4, 1.1, 1.2, 1.3])
    stream = io.StringIO()
    console = ConsoleLine(600, stream=stream, clock=lambda: next(times))
    for i in range(6):
        values = {"time/total_timesteps": 100 * (i + 1), "time/fps": 50}
        if i == 2:  # measured on an iteration whose line is skipped
            values |= {KEY: 123.0, KEY + "_low": 50.0, KEY + "_high": float("inf")}
        console.write(values, {})
    lines = stream.getvalue().splitlines()
    assert [line.split("/")[0].strip("[ ") for line in lines] == ["100", "400", "600"]  # 0 s, 1.1 s, and the last
    assert "B_simple(env_value) 123 [50, inf]" in lines[1] and "B_simple" not in lines[0]


def test_every_iteration_without_a_minimum_interval():
    stream = io.StringIO()
    console = ConsoleLine(300, stream=stream, min_interval_s=0.0, clock=lambda: 0.0)
    for i in range(3):
        console.write({"time/total_timesteps": 100 * (i + 1)}, {})
    assert len(stream.getvalue().splitlines()) == 3
