"""The Atari environments (``atari``: ale-py's vector env, SB3's wrappers, the RAM observation) and the score
keeping of their games (``games``)."""
