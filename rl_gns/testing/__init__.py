"""Testing aids shipped with the package: ground truth that the estimator is checked against. Built on the core
library; nothing of rl-gns imports it."""
