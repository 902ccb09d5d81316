"""`judgewatch demo`'s steps: the post-release gate's outcomes on recorded answers built from the golden sets, then
the vLLM judge measured, labels from annotations and the calibration flow (README, "What the demo shows")."""

from __future__ import annotations

import asyncio
import logging
import socket
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from judgewatch.hashing import UnitHash, hash_unit
from judgewatch.redact import mask_url
from judgewatch.regression.golden import GoldenItem, load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.settings import Settings
from judgewatch.storage.db import session_scope
from judgewatch.storage.releases import accept_baseline
from judgewatch.url_secrets import hide

DATASETS = ("halueval_qa", "halluqa")
MINI_DATASETS = ("halueval_qa_mini", "halluqa_mini")
BAD_SHARE = 0.4  # r3 quantized: share of items answered with a known-bad answer
REPHRASED_SHARE = 0.1  # r2 quantized: share of items with another correct answer that use it
Echo = Callable[[str], None]
RunGate = Callable[..., dict[str, Any]]


@dataclass
class Outcome:
    release: str
    judge: str
    expected: int
    result: dict[str, Any]
    seconds: float = 0.0

    @property
    def as_expected(self) -> bool:
        return int(self.result["exit_code"]) == self.expected


def _share(item_id: str, salt: str) -> float:
    """A deterministic pseudo-random number in [0, 1) per item: the same items are picked on every run."""
    return hash_unit(item_id, salt, variant=UnitHash.LABELED)


def build_answer_files(folder: Path, datasets: tuple[str, ...], settings: Settings) -> dict[str, Path]:
    """Recorded answers of every (release, tier), from the golden sets' own good and bad answers."""
    items = [i for name in datasets for i in load_golden_set(name, datasets_dir=settings.datasets_dir).items]

    def good(i: GoldenItem) -> str:
        return i.good_answers[0] if i.good_answers else (i.reference_answer or "")

    def rephrased(i: GoldenItem) -> str:
        other = len(i.good_answers) > 1 and _share(i.id, "r2") < REPHRASED_SHARE
        return i.good_answers[-1] if other else good(i)

    def degraded(i: GoldenItem) -> str:
        return i.bad_answers[0] if i.bad_answers and _share(i.id, "r3") < BAD_SHARE else good(i)

    files = {"good": good, "r2-quantized": rephrased, "r3-quantized": degraded}
    paths = {name: folder / f"{name}.jsonl" for name in files}
    for name, pick in files.items():
        write_recorded_answers(paths[name], [(item.id, pick(item)) for item in items])
    return paths


DEMO_BASELINE_TIER = "full"  # the demo declares its full-precision tier the baseline (as `--baseline-tier full`)


def _tiers(files: dict[str, Path], release: str) -> list[str]:
    quantized = files.get(f"{release}-quantized", files["good"])
    return [f"full={files['good']}", f"quantized={quantized}"]


WIDTH = 110  # the demo's lines wrap here: a terminal shows each one whole


def say(echo: Echo, text: str, indent: str = "   ") -> None:
    """`text` line by line, each wrapped at `WIDTH` with its continuation indented two more (URLs and paths are
    never cut)."""
    for line in text.splitlines() or [""]:
        wrapped = textwrap.wrap(
            line, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=False,
            break_on_hyphens=False,
        )  # fmt: skip
        for part in wrapped or [""]:
            echo(part)


def _show(echo: Echo, outcome: Outcome, seen: dict[str, str]) -> None:
    """One release's outcome; a reason, warning or note already shown (the judge's trust, the same on every release)
    is named by where it was shown instead of printed again (`seen`: entry -> "for release r1", "measured above")."""
    r = outcome.result
    mark = "as expected" if outcome.as_expected else f"UNEXPECTED (expected exit {outcome.expected})"
    echo(f"\n== release {outcome.release} ({outcome.judge}): exit {r['exit_code']}, {mark} ({outcome.seconds:.0f} s)")
    say(echo, r["summary"])
    for kind in ("reasons", "warnings", "notes"):
        for entry in r.get(kind, []):
            first = entry.splitlines()[0]
            if first in r["summary"]:  # the summary already says it ("COULD NOT EVALUATE (exit 2): <reason>")
                continue
            said = seen.setdefault(first, f"for release {outcome.release}")
            if said != f"for release {outcome.release}":
                echo(f"   {kind[:-1]}: {first.split(': ')[0]}: as {said}")
                continue
            say(echo, f"{kind[:-1]}: {first}")
    echo(f"   report: {r['report']}")


def validate_reference_judge(engine: Engine, settings: Settings, echo: Echo) -> str:
    """Measure the offline reference judge on the mini sets' known answers (seconds), so reports state its trust;
    returns the first line of what it printed. Both rubrics: the pointwise verdict is the one the gate states, the
    pairwise one fills the Judges page."""
    from judgewatch.contract.rubric import load_rubric
    from judgewatch.trust.policy import policy_from_settings
    from judgewatch.trust.probes import DEFAULT_ITEMS
    from judgewatch.trust.runs import PAIRWISE_RUBRIC, POINTWISE_RUBRIC, judges_under_test, validate

    [reference] = judges_under_test("reference", settings)
    rubrics = [load_rubric(name, settings.rubrics_dir) for name in (POINTWISE_RUBRIC, PAIRWISE_RUBRIC)]
    sets = [load_golden_set(name, datasets_dir=settings.datasets_dir) for name in MINI_DATASETS]
    policy = policy_from_settings(settings)  # with the probes: known answers alone leave a judge "not probed"
    report = asyncio.run(validate(reference, rubrics, sets, engine=engine, policy=policy, probe_items=DEFAULT_ITEMS))
    for verdict in report.verdicts[:1]:
        say(echo, verdict.summary)
        return verdict.summary.strip().splitlines()[0]
    return ""


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released): the down endpoint of release r4."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def endpoint_down_step(files: dict[str, Path], gate: RunGate) -> Outcome:
    """r4: the full tier's recorded answers are fine, but the quantized tier is a live endpoint that is down. The gate
    must say it could not evaluate (exit 2) instead of passing on the one tier it could judge."""
    down = f"quantized=http://127.0.0.1:{_closed_port()}/v1#quantized"
    started = time.monotonic()
    result = gate(release="r4", answers=[f"full={files['good']}"], tiers=[down], judge="reference")
    return Outcome("r4", "reference judge", 2, result, time.monotonic() - started)


def wait_for_judge(healthy: Callable[[], bool], *, wait_s: float, echo: Echo, poll_s: float = 2.0) -> bool:
    """True once `healthy()` is; polls for up to `wait_s` seconds (0: asks once), saying once that it waits."""
    deadline = time.monotonic() + wait_s
    if healthy():
        return True
    if wait_s <= 0:
        return False
    echo(f"   waiting up to {wait_s:.0f} s for it to come up (vLLM loads beside the gate steps)")
    started = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
        if healthy():
            echo(f"   up after {time.monotonic() - started:.0f} s more")
            return True
    return False


def demo_judge_trust_step(
    engine: Engine, settings: Settings, files: dict[str, Path], gate: RunGate, echo: Echo, *, judge_wait_s: float = 0.0
) -> Outcome | None:
    """Measure the SmolLM2 vLLM judge, then ask the gate to rest on it: it must refuse (exit 2). Skipped, with the
    reason, when the judge does not answer within `judge_wait_s`; the gate runs only on a judge measured "not
    trustworthy" (it then exits before judging: 1,900 answers with SmolLM2 take a quarter of an hour on 2 cores)."""
    from judgewatch.trust.runs import ademo_trust_step

    where = mask_url(settings.judge_url)
    echo(f"\n== judge trust: measuring the vLLM judge {settings.judge_model} at {where} (last: it is slow)")
    from judges.chat_client import ChatClient
    from judges.config import judge_endpoint

    async def healthy() -> bool:
        client = ChatClient(judge_endpoint(settings).with_changes(timeout_s=5.0))
        try:
            return await client.health()
        finally:
            await client.aclose()

    if not wait_for_judge(lambda: asyncio.run(healthy()), wait_s=judge_wait_s, echo=echo):
        say(echo, f"skipped: no judge answers at {mask_url(settings.judge_url)} (start it with `make judge-up`)")
        return None
    started = time.monotonic()
    trust_step = ademo_trust_step(
        engine, settings.judge_url, settings.judge_model, settings=settings, include_reference=False,  # measured first
        echo=lambda line: say(echo, line),
    )  # fmt: skip
    with said_here("judgewatch.trust.runs"):  # the step logs its verdict; the demo prints it just below
        verdict = asyncio.run(trust_step)
    say(echo, verdict.summary + f"\n(measured in {time.monotonic() - started:.0f} s)")
    if verdict.trustworthy is not False:
        echo("   the gate with this judge is skipped: it was not measured untrustworthy, and judging every answer")
        echo("   with it would take too long for a demo")
        return None
    started = time.monotonic()
    report = settings.data_dir / "reports" / "regression-r3-vllm-judge.md"
    result = gate(release="r3", answers=_tiers(files, "r3"), judge=settings.judge_url, report=str(report))
    return Outcome("r3", f"judge {settings.judge_model}", 2, result, time.monotonic() - started)


def annotation_labels_step(engine: Engine, settings: Settings, echo: Echo) -> None:
    """Label the releases' routed verdicts from the golden sets' own annotations (never a reviewer's labels)."""
    from judgewatch.review.dataset_labels import label_from_annotations

    echo("\n== labels derived from the golden sets' own human annotations (label_via=dataset_annotation)")
    labels = label_from_annotations(engine, rubric_name="answer_quality", datasets_dir=settings.datasets_dir)
    say(echo, labels.describe())


def calibration_step(engine: Engine, echo: Echo) -> None:
    """The daily calibration flow, once: it stores what the Tiers page, Calibration page and report read."""
    from flows.calibration import calibration

    echo("\n== calibration flow: tier estimates, agreement, drift, anchors, and the Tiers page snapshots")
    url = engine.url.render_as_string(hide_password=False)
    result = asyncio.run(calibration(rubric="answer_quality", judge="reference", database_url=hide(url)))
    say(
        echo,
        f"{result['verdicts']} verdicts of tiers {', '.join(result['tiers']) or 'none'}, {result['labeled']} "
        f"labeled; {result['page_views']} page snapshots stored (`judgewatch calibrate` refreshes them)",
    )


def run_demo(
    engine: Engine,
    settings: Settings,
    run_gate: RunGate,
    echo: Echo,
    *,
    quick: bool = False,
    judge_trust: bool = True,
    judge_wait_s: float = 0.0,
) -> list[Outcome]:
    """The demo's releases in order; each Outcome says whether the gate did what the demo expects."""
    datasets = MINI_DATASETS if quick else DATASETS
    gate = partial(run_gate, datasets=list(datasets), baseline_tier=DEMO_BASELINE_TIER)
    started = time.monotonic()
    folder = settings.data_dir / "demo" / "answers"
    files = build_answer_files(folder, datasets, settings)
    echo(f"judgewatch demo: golden sets {', '.join(datasets)}; tiers full and quantized.")
    echo("The tiers' answers are RECORDED answers built from the real data (no model generates them):")
    echo("  r1: known-good answers on both tiers (first release: it becomes the baseline)")
    echo(f"  r2: the same, but on quantized {REPHRASED_SHARE:.0%} of the items with another correct answer use it")
    echo(f"  r3: on quantized, {BAD_SHARE:.0%} of the items get the dataset's known-bad (hallucinated/wrong) answer")
    echo("  r4: the full tier's answers are good, but the quantized tier's endpoint is down")
    echo(f"  answer files: {folder}")
    echo("\n== measuring the offline reference judge on the mini sets (it grades the releases)")
    measured = validate_reference_judge(engine, settings, echo)
    outcomes: list[Outcome] = []
    seen = {f"judge trust: {measured}": "measured above"}  # what was printed already, and where
    # said before the first gate run, which is silent for half a minute while Prefect's local server starts
    echo("\n== the gate on releases r1 to r4 (the first run also waits for Prefect's local server to start)")
    for release, expected in (("r1", 0), ("r2", 0), ("r3", 1)):
        step = time.monotonic()
        result = gate(release=release, answers=_tiers(files, release), judge="reference")
        outcomes.append(Outcome(release, "reference judge", expected, result, time.monotonic() - step))
        _show(echo, outcomes[-1], seen)
        if release == "r1" and result["exit_code"] == 0:
            with session_scope(engine, write=True) as session:
                accept_baseline(session=session, release="r1", by="demo", note="judgewatch demo: the first release")
            echo("   accepted r1 as the baseline of both tiers (`judgewatch baseline accept --release r1`)")
    outcomes.append(endpoint_down_step(files, gate))
    _show(echo, outcomes[-1], seen)
    echo(f"\nthe gate's three outcomes (pass 0, regression 1, cannot evaluate 2) in {time.monotonic() - started:.0f} s")
    annotation_labels_step(engine, settings, echo)
    if judge_trust:
        trust_outcome = demo_judge_trust_step(engine, settings, files, gate, echo, judge_wait_s=judge_wait_s)
        if trust_outcome is not None:
            outcomes.append(trust_outcome)
            _show(echo, trust_outcome, seen)
    calibration_step(engine, echo)
    echo(f"\ndemo finished in {time.monotonic() - started:.0f} s{_since_make()}")
    return outcomes


def _since_make() -> str:
    """`make demo` in all (set-up, the judge's start and the demo), when make says when it started."""
    import os

    started = os.environ.get("JUDGEWATCH_MAKE_STARTED", "")
    return f" (make demo: {time.time() - float(started):.0f} s in all, set-up included)" if started.isdigit() else ""


@contextmanager
def said_here(name: str) -> Iterator[None]:
    """Hold back the named logger's warnings while the demo prints the same finding itself (said once, not twice);
    errors still show."""
    log = logging.getLogger(name)
    before = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(before)
