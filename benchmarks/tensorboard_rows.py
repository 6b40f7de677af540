"""The cost of a run's TensorBoard rows: SB3's ``TensorBoardOutputFormat`` against rl-gns's run output.

Both write the same rows through SB3's ``Logger`` (``record`` then ``dump``, which flushes): ``--rows`` rows of
``--keys`` scalars each, the shape of a run that measures the noise scale every iteration. SB3's output writes one
event per scalar; the run's (:class:`rl_gns.records.logs.RunTensorBoardOutputFormat`) one event per row. The
configurations alternate in ``--chunks`` chunks; the table gives milliseconds per row, median [min, max] of the
chunks. Run it on an idle machine.

    python benchmarks/tensorboard_rows.py --out results/benchmarks/tensorboard_rows_cpu.json
"""

from __future__ import annotations

import json
import platform
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import tyro
from stable_baselines3.common.logger import KVWriter, Logger, TensorBoardOutputFormat

from rl_gns.records.logs import RunTensorBoardOutputFormat

CONFIGS = {"sb3": TensorBoardOutputFormat, "rl_gns_run": RunTensorBoardOutputFormat}


@dataclass
class Args:
    """Milliseconds per logged row, with each TensorBoard output."""

    rows: int = 100
    """Rows per chunk (PPO iterations)."""
    keys: int = 70
    """Scalars per row."""
    chunks: int = 5
    """Chunks per configuration, alternating."""
    out: Path | None = None
    """JSON file for the results; only printed if unset."""


def time_rows(output: type[KVWriter], rows: int, keys: int) -> float:
    """Seconds to record and dump ``rows`` rows of ``keys`` scalars, the writer closed at the end.

    :param output: the TensorBoard output class, built on a new temporary directory.
    :param rows: rows to dump.
    :param keys: scalars per row.
    """
    with tempfile.TemporaryDirectory() as folder:
        logger = Logger(folder, [output(folder)])  # type: ignore[call-arg]
        start = time.perf_counter()
        for row in range(rows):
            for key in range(keys):
                logger.record(f"gns/key_{key}", float(row * keys + key))
            logger.dump(step=row)
        logger.close()
        return time.perf_counter() - start


def main(args: Args) -> None:
    times: dict[str, list[float]] = {name: [] for name in CONFIGS}
    for _ in range(args.chunks):
        for name, output in CONFIGS.items():
            times[name].append(time_rows(output, args.rows, args.keys) / args.rows * 1e3)
    print(f"| configuration | ms per row of {args.keys} scalars, median [min, max] of {args.chunks} chunks |")
    print("|---|---|")
    for name, per_row in times.items():
        print(f"| {name} | {statistics.median(per_row):.2f} [{min(per_row):.2f}, {max(per_row):.2f}] |")
    ratio = statistics.median(times["sb3"]) / statistics.median(times["rl_gns_run"])
    print(f"rl-gns's run output writes a row {ratio:.1f}x faster (one event per row against one per scalar)")
    if args.out is not None:
        record = {
            "args": {k: str(v) for k, v in asdict(args).items()},
            "machine": platform.platform(),
            "processor": platform.processor(),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "ms_per_row": times,
            "ratio": ratio,
        }
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
