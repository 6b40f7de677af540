"""The file formats: the run-directory schema every experiment writes and every report reads, and the
data tables shipped with the package. Imports only :mod:`rl_gns.core`."""
