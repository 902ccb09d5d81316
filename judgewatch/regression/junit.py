"""The gate's decision as JUnit XML, for a release pipeline's test-results view (`regress --junit`), built with
xml.etree from the report's record. docs/release_gate.md, "The pipeline's own formats".
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC

from judgewatch.regression.gate import Comparison, gap_name
from judgewatch.regression.report import RegressionReport

SUITE = "judgewatch.regress"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML 1.0 cannot carry


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    outcome: str = ""  # failure | error | skipped | "" (passed)
    message: str = ""
    detail: str = ""


def cases(report: RegressionReport) -> list[Case]:
    """The test cases of the gate's decision, in the report's order."""
    gate, sets = report.gate, " + ".join(report.datasets) or "no golden set"
    regressed = {(r.tier, r.criterion) for r in gate.regressions}
    blocked: dict[tuple[str, str], list[str]] = {}
    for u in gate.unevaluated:
        blocked.setdefault((u.tier, u.criterion), []).append(u.reason)
    used: set[tuple[str, str]] = set()

    def case(tier: str, c: Comparison, margin: float, gated: bool) -> Case:
        key, outcome, message = (tier, c.criterion), "", ""
        if key in regressed:
            outcome, message = "failure", f"regressed: its whole {report.level:.0%} interval lies below -{margin}"
        elif reasons := [k for k in (key, (tier, "")) if k in blocked]:
            used.update(reasons)
            outcome, message = "error", "; ".join(r for k in reasons for r in blocked[k])
        elif not gated:
            outcome, message = "skipped", "reported, not gated (no --gap-margin)"
        elif c.diff.n == 0:
            outcome, message = "skipped", "no paired scores (not applicable to these items)"
        name = f"{c.criterion}: {c.candidate} - {c.baseline} on {sets}"
        detail = f"candidate - baseline: {c.describe()}" + (f"; {c.basis()}" if c.basis() else "")
        return Case(f"{SUITE}.{tier}", name, outcome, message, detail)

    out = []
    for section in report.tiers:
        if section.evaluation.baseline_release is None:
            first = "first release of this tier: no baseline to compare with"
            out.append(Case(f"{SUITE}.{section.tier}", f"baseline release on {sets}", "skipped", first))
        out += [case(section.tier, c, report.margin, True) for c in section.evaluation.comparisons]
    margin, gated = report.gap_rule
    out += [case(gap_name(c), c, margin, gated) for c in report.gaps]
    for (tier, criterion), reasons in blocked.items():
        if (tier, criterion) not in used:
            classname = f"{SUITE}.{tier}" if tier else SUITE
            out += [Case(classname, criterion or reason, "error", reason) for reason in reasons]
    return out


def _properties(report: RegressionReport) -> list[tuple[str, str]]:
    judge, gate = report.judge, report.gate
    found = [
        ("release", report.release),
        ("golden_sets", ", ".join(f"{name}@{revision}" for name, revision in report.datasets.items())),
        ("judge", f"{judge.kind}:{judge.name} (config {judge.config_hash})" if judge else "none"),
        ("judge.trustworthy", "unmeasured" if report.trustworthy is None else str(report.trustworthy).lower()),
        ("judge.trust", report.trust_headline()),
        ("baseline.tier", report.baseline_tier or "none"),
        *[(f"baseline.release.{s.tier}", s.evaluation.baseline_release or "none") for s in report.tiers],
        ("margin", str(report.margin)),
        ("gate.exit_code", str(gate.exit_code)),
        ("gate.summary", gate.summary),
    ]
    return found + ([("judge.accepted_unvalidated", gate.accepted_unvalidated)] if gate.accepted_unvalidated else [])


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def render_junit(report: RegressionReport) -> str:
    """The JUnit XML document (UTF-8) of the report's gate decision."""
    found = cases(report)
    counts = {
        "tests": str(len(found)),
        "failures": str(sum(c.outcome == "failure" for c in found)),
        "errors": str(sum(c.outcome == "error" for c in found)),
        "skipped": str(sum(c.outcome == "skipped" for c in found)),
    }
    root = ET.Element("testsuites", {"name": SUITE, **counts})
    when = report.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    suite = ET.SubElement(root, "testsuite", {"name": f"{SUITE} release {_text(report.release)}", **counts})
    suite.set("timestamp", when)
    properties = ET.SubElement(suite, "properties")
    for name, value in _properties(report):
        ET.SubElement(properties, "property", name=name, value=_text(value))
    for c in found:
        element = ET.SubElement(suite, "testcase", classname=_text(c.classname), name=_text(c.name))
        if c.outcome:
            outcome = ET.SubElement(element, c.outcome, message=_text(c.message))
            if c.outcome != "skipped":
                outcome.set("type", "regression" if c.outcome == "failure" else "could not evaluate")
            outcome.text = _text(c.detail) or None
        elif c.detail:
            ET.SubElement(element, "system-out").text = _text(c.detail)
    if notes := [f"warning: {w}" for w in report.gate.warnings] + [f"note: {n}" for n in report.gate.notes]:
        ET.SubElement(suite, "system-out").text = _text("\n".join(notes))
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True).decode("utf-8") + "\n"
