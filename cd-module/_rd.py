"""Normalized response-time deviation R_d = (R - S) / S (paper section 6.2)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["normalized_deviation"]


def normalized_deviation(response_us: npt.ArrayLike, service_us: npt.ArrayLike) -> np.ndarray:
    """R_d per request, using the service time S each response echoed
    (GE column ``service_us``). NaN where there was no response or S is 0:
    a zero service time leaves nothing to normalise by."""
    r = np.asarray(response_us, dtype=np.float64)
    s = np.asarray(service_us, dtype=np.float64)
    out = np.full(np.broadcast(r, s).shape, np.nan)
    ok = np.isfinite(r) & np.isfinite(s) & (s > 0)
    np.divide(r - s, s, out=out, where=ok)
    return out
