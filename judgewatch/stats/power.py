"""The release gate's power: the smallest regression it catches with a stated probability, and how many golden
items a margin needs (the one-sided t-test's sample-size formula: docs/statistics.md, "Gate power")."""

from __future__ import annotations

import math

from scipy import special

POWER = 0.8


def detectable_drop(sd: float, n: int, margin: float, *, level: float = 0.95, power: float = POWER) -> float:
    """The smallest drop of the mean score the gate catches with probability `power` (NaN below two pairs)."""
    if n < 2 or not math.isfinite(sd):
        return float("nan")
    df = max(n - 1, 1)
    return margin + float(special.stdtrit(df, 0.5 + level / 2.0) + special.stdtrit(df, power)) * sd / math.sqrt(n)


def items_needed(sd: float, margin: float, drop: float, *, level: float = 0.95, power: float = POWER) -> int:
    """The fewest paired golden items with which the gate catches a drop of `drop` with probability `power`."""
    if not drop > margin:
        raise ValueError(f"a drop of {drop} is never caught with margin {margin}: it must exceed the margin")
    if not sd > 0:
        raise ValueError(f"the paired differences' standard deviation must be positive, got {sd}")
    z = float(special.ndtri(0.5 + level / 2.0) + special.ndtri(power))
    n = max(2, math.ceil((z * sd / (drop - margin)) ** 2))  # the normal formula, then the t quantiles' few more
    while detectable_drop(sd, n, margin, level=level, power=power) > drop:
        n += 1
    return n
