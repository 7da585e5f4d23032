"""Contention detection (paper section 6.2): the CD node's service time S,
the normalized deviation R_d = (R - S) / S, and the contention verdict.

The harness starts the CD pair (a CD-GE sending a sequential,
deterministic-interval workload to a CD node placed among the devices);
this package computes S for it and analyses what the CD-GE recorded.
"""

from wotbench.cd._change import CHANGE_QUANTILE, combine, detect_change
from wotbench.cd._detect import (
                                 ContentionResult,
                                 Cusum,
                                 RdStats,
                                 Window,
                                 baseline_problem,
                                 cusum_design,
                                 detect_contention,
                                 hodges_lehmann,
)
from wotbench.cd._rd import normalized_deviation
from wotbench.cd._service import cd_service_us, mean_service_us, read_resources

__all__ = [
    "CHANGE_QUANTILE", "combine", "detect_change",
    "ContentionResult", "Cusum", "RdStats", "Window", "baseline_problem", "cusum_design", "detect_contention",
    "hodges_lehmann",
    "normalized_deviation", "cd_service_us", "mean_service_us", "read_resources",
]
