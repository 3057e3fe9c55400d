# SPDX-License-Identifier: MIT
"""Percentiles and ratios, the same way for every case and both stacks."""

from __future__ import annotations

import math


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile by nearest rank (p in (0, 100]); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return float(ordered[min(rank, len(ordered)) - 1])


def latency_summary(latencies_us: list[int]) -> dict:
    """count, p50, p90, p99, p99.9, max and mean, in ms."""
    values = [v / 1000 for v in latencies_us]
    return {
        "count": len(values),
        "p50_ms": round(percentile(values, 50), 3),
        "p90_ms": round(percentile(values, 90), 3),
        "p99_ms": round(percentile(values, 99), 3),
        "p999_ms": round(percentile(values, 99.9), 3),
        "max_ms": round(max(values), 3) if values else float("nan"),
        "mean_ms": round(sum(values) / len(values), 3) if values else float("nan"),
    }


def ratio(swift: float, rust: float) -> float:
    """Swift / Rust, rounded; NaN when either is missing or Rust is 0."""
    if swift is None or rust is None or not math.isfinite(swift) or not math.isfinite(rust) or rust == 0:
        return float("nan")
    return round(swift / rust, 3)


def fmt(value, digits: int = 2) -> str:
    """A number for a table cell ("–" for missing)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"
