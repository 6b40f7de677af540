"""Experiments: commands that write run directories (train, sweep, bench, scaling). They never import reports."""
