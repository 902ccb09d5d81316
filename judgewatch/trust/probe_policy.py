"""Limits per bias probe, and the one line per probe that the CLI, the Judges page and the gate quote.

A probe can only take trust away: a judge over any limit is untrustworthy, one within every limit is still
judged on its known-answer and human-label records (see `judgewatch.trust.policy.evaluate`).
Defaults, on a 1-5 scale:
- verbosity: mean shift (padded - plain) of each limited criterion < +0.25 and its 95% upper bound < +0.5;
- confidence: share of items whose bad answer, with a confident preamble, overtakes the hedged good answer
  (when plainly it did not) <= 10% and its Wilson upper bound < 30%;
- reference-blindness: no verdict may score a criterion that needs references on an item without them;
- consistency: identical verdicts when judged again >= 95%, with the criteria order shuffled >= 80%.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PROBES = ("verbosity", "confidence", "reference_blindness", "consistency")


class ProbeLimits(BaseModel):
    """What a judge may not exceed on the bias probes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verbosity_criteria: tuple[str, ...] = ("faithfulness", "completeness")
    max_verbosity_shift: float = 0.25
    max_verbosity_upper: float = 0.5
    confidence_criteria: tuple[str, ...] = ("faithfulness",)
    max_overtake_share: float = Field(default=0.10, ge=0.0, le=1.0)
    max_overtake_upper: float = Field(default=0.30, ge=0.0, le=1.0)
    max_blind_share: float = Field(default=0.0, ge=0.0, le=1.0)
    min_repeat_identical: float = Field(default=0.95, ge=0.0, le=1.0)
    min_shuffled_identical: float = Field(default=0.80, ge=0.0, le=1.0)

    def describe(self) -> str:
        return (
            f"bias probes: verbosity shift on {'/'.join(self.verbosity_criteria)} < {self.max_verbosity_shift:+.2f} "
            f"(upper bound < {self.max_verbosity_upper:+.2f}), confident bad answer overtakes hedged good on "
            f"<= {self.max_overtake_share:.0%} (upper bound < {self.max_overtake_upper:.0%}), reference-needing "
            f"criteria scored without references <= {self.max_blind_share:.0%}, identical verdicts judged again >= "
            f"{self.min_repeat_identical:.0%} and with criteria shuffled >= {self.min_shuffled_identical:.0%}"
        )


def _num(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _share(fig: dict[str, Any], count: str, total: str) -> str:
    return (
        f"{fig.get(count, 0)}/{fig.get(total, 0)} ({_num(fig.get('share'), '.0%')} "
        f"[{_num(fig.get('low'), '.0%')}, {_num(fig.get('high'), '.0%')}])"
    )


def _verbosity(fig: dict[str, Any], limits: ProbeLimits) -> tuple[str, list[str], bool]:
    parts, failures, measured = [], [], False
    for name, c in fig.get("criteria", {}).items():
        shift, high = c.get("shift"), c.get("high")
        figure = f"{name} shift {_num(shift, '+.2f')} [{_num(c.get('low'), '+.2f')}, {_num(high, '+.2f')}]"
        parts.append(f"{figure}, up on {_num(c.get('up_share'), '.0%')} of {c.get('n', 0)}")
        if name not in limits.verbosity_criteria or shift is None:
            continue
        measured = True
        if shift >= limits.max_verbosity_shift or high is None or high >= limits.max_verbosity_upper:
            failures.append(
                f"{figure}, up on {_num(c.get('up_share'), '.0%')} (limit < {limits.max_verbosity_shift:+.2f}, "
                f"upper bound < {limits.max_verbosity_upper:+.2f})"
            )
    return "; ".join(parts) or "nothing scored", failures, measured


def _confidence(fig: dict[str, Any], limits: ProbeLimits) -> tuple[str, list[str], bool]:
    parts, failures, measured = [], [], False
    for name, c in fig.get("criteria", {}).items():
        figure = f"{name}: confident bad overtook hedged good on {_share(c, 'overtaken', 'eligible')}"
        parts.append(f"{figure}, margin shift {_num(c.get('margin_shift'), '+.2f')}")
        share, high = c.get("share"), c.get("high")
        if name not in limits.confidence_criteria or share is None:
            continue
        measured = True
        if share > limits.max_overtake_share or high is None or high >= limits.max_overtake_upper:
            failures.append(
                f"{figure} (limit <= {limits.max_overtake_share:.0%}, upper bound < {limits.max_overtake_upper:.0%})"
            )
    return "; ".join(parts) or "nothing scored", failures, measured


def _reference_blindness(fig: dict[str, Any], limits: ProbeLimits) -> tuple[str, list[str], bool]:
    scored = ", ".join(f"{k} {v}" for k, v in sorted(fig.get("scored_criteria", {}).items()) if v)
    line = f"scored a reference-needing criterion without references on {_share(fig, 'blind', 'answered')}"
    line += f" ({scored})" if scored else ""
    line += f"; declared not applicable on {fig.get('declared_not_applicable', 0)}/{fig.get('answered', 0)}"
    share = fig.get("share")
    over = share is not None and share > limits.max_blind_share
    return line, [f"{line} (limit <= {limits.max_blind_share:.0%})"] if over else [], share is not None


def _consistency(fig: dict[str, Any], limits: ProbeLimits) -> tuple[str, list[str], bool]:
    parts, failures, measured = [], [], False
    for key, label, minimum in (
        ("repeat", "judged again", limits.min_repeat_identical),
        ("shuffled", "criteria shuffled", limits.min_shuffled_identical),
    ):
        figure = f"{label} identical {_share(fig.get(key, {}), 'identical', 'n')}"
        parts.append(figure)
        share = fig.get(key, {}).get("share")
        if share is None:
            continue
        measured = True
        if share < minimum:
            failures.append(f"{figure} (limit >= {minimum:.0%})")
    return "; ".join(parts), failures, measured


_CHECKS = {
    "verbosity": _verbosity,
    "confidence": _confidence,
    "reference_blindness": _reference_blindness,
    "consistency": _consistency,
}


def probe_lines(figures: dict[str, Any], limits: ProbeLimits) -> list[tuple[str, bool | None, str]]:
    """(probe, passed, 'probe: figures') per probe measured; passed is None when no limited figure exists."""
    return [
        (probe, passed, f"{probe.replace('_', '-')}: {line}") for probe, passed, line, _ in _checked(figures, limits)
    ]


def _checked(figures: dict[str, Any], limits: ProbeLimits) -> list[tuple[str, bool | None, str, list[str]]]:
    result = []
    for probe in PROBES:
        fig = figures.get("probes", {}).get(probe)
        if fig is not None:
            line, failures, measured = _CHECKS[probe](fig, limits)
            result.append((probe, None if not measured else not failures, line, failures))
    return result


def evaluate_probes(
    figures: dict[str, Any], n_items: int, limits: ProbeLimits, min_items: int
) -> tuple[bool | None, str]:
    """(passed, detail) of one bias-probe record: each failed probe named with its figure and limit."""
    checked = _checked(figures, limits)
    failed = [f"{probe.replace('_', '-')}: {'; '.join(failures)}" for probe, ok, _, failures in checked if ok is False]
    if n_items < min_items:
        over = f" (over a limit: {' | '.join(failed)})" if failed else ""
        return None, f"{len(checked)} probes, n={n_items} (fewer than {min_items} items: inconclusive){over}"
    if failed:
        return False, "FAILED " + " | ".join(failed) + f", n={n_items}"
    if not checked or any(ok is None for _, ok, _, _ in checked):
        return None, f"probes without a figure: {', '.join(p for p, ok, _, _ in checked if ok is None) or 'all'}"
    return True, f"passed {', '.join(p.replace('_', '-') for p, _, _, _ in checked)}, n={n_items}"


def short_label(figures: dict[str, Any], limits: ProbeLimits) -> str:
    """A compact cell for the leaderboard: each probe's headline figure and 'ok' or 'FAIL'."""
    cells = []
    for probe, ok, _ in probe_lines(figures, limits):
        fig = figures["probes"][probe]
        if probe == "verbosity":
            shifts = [c.get("shift") for k, c in fig.get("criteria", {}).items() if k in limits.verbosity_criteria]
            value = _num(max((s for s in shifts if s is not None), default=None), "+.2f")
        elif probe == "confidence":
            shares = [c.get("share") for k, c in fig.get("criteria", {}).items() if k in limits.confidence_criteria]
            value = _num(max((s for s in shares if s is not None), default=None), ".0%")
        elif probe == "reference_blindness":
            value = _num(fig.get("share"), ".0%")
        else:
            value = "/".join(_num(fig.get(k, {}).get("share"), ".0%") for k in ("repeat", "shuffled"))
        mark = {True: "ok", False: "FAIL", None: "?"}[ok]
        cells.append(f"{probe.replace('_', '-')} {value} {mark}")
    return ", ".join(cells)
