"""The core library: estimator maths, measurement, the agent, Atari envs, and the pure tradeoff,
target and throughput maths. Imports nothing else of rl-gns; writes no files beyond SB3's own."""
