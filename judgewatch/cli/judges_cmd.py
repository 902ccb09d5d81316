"""`judgewatch judges validate|list|limit|align|unalign` (docs/judges.md). `validate` exits 0 when every judge
measured is trustworthy (or, with a warning, inconclusive or not probed), 1 when one is not, 2 when none was measured.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated

import typer

from judgewatch.cli._store import DatabaseUrl, fail, store, store_label

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from judgewatch.trust.align import AlignResult
    from judgewatch.trust.policy import TrustPolicy
    from judgewatch.trust.runs import ValidationReport

app = typer.Typer(help="Judges: measure their trust, list what was measured.", no_args_is_help=True)


def _print_report(report: ValidationReport, policy: TrustPolicy) -> None:
    from judgewatch.trust.policy import dataset_label
    from judgewatch.trust.probe_policy import fmt, probe_lines

    for record in report.records:
        where = dataset_label(record.dataset, record.dataset_revision)
        typer.echo(
            f"{record.judge_kind}:{record.judge_name} | {record.rubric_name} {record.rubric_version} | "
            f"{record.evidence.replace('_', ' ')} | {where} | {record.n_items} items"
        )
        for _, passed, line in probe_lines(record.figures, policy.probes):
            typer.echo(f"  probe {line}  [{ {True: 'ok', False: 'FAILED', None: 'no figure'}[passed] }]")
        reference = record.figures.get("reference", {}).get("criteria", {})
        for name, fig in record.figures.get("criteria", {}).items():
            line = f"  {name:<13} AUROC {fmt(fig.get('auroc'))} [{fmt(fig.get('low'))}, {fmt(fig.get('high'))}]"
            if fig.get("gap") is not None:
                line += f"  gap {fig['gap']:+.2f}"
            if fig.get("position_consistency") is not None:
                a_rate = fmt(fig.get("a_rate"), ".0%")
                line += f"  position consistency {fig['position_consistency']:.0%} (A chosen {a_rate})"
            line += f"  unscored {fmt(fig.get('unscored_rate'), '.0%')}"
            if name in reference and record.judge_kind != "reference":
                line += f"  | reference judge AUROC {fmt(reference[name].get('auroc'))}"
            typer.echo(line)
            if weighted := fig.get("expected"):
                typer.echo(
                    f"  {'':<13} AUROC {fmt(weighted.get('auroc'))} [{fmt(weighted.get('low'))}, "
                    f"{fmt(weighted.get('high'))}] probability-weighted  gap {fmt(weighted.get('gap'), '+.2f')}  "
                    f"without a float {fmt(weighted.get('unscored_rate'), '.0%')}"
                )
        if reasons := record.figures.get("unscored_reasons"):
            typer.echo("  unscored: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))
        window = record.figures.get("context_window") or {}
        if window.get("items_trimmed") or window.get("answers_too_long"):
            typer.echo(
                f"  context window: {window['items_trimmed']} of {record.n_items} items needed their references "
                f"trimmed ({window['answers_trimmed']} answers), {window['answers_too_long']} answers too long"
            )
    for verdict in report.verdicts:
        typer.echo(("" if verdict.trustworthy else "WARNING: ") + verdict.summary)


@app.command("validate")
def validate_cmd(
    judge: Annotated[str, typer.Option("--judge", help="'reference' or an OpenAI-compatible base URL (comma list)")],
    dataset: Annotated[list[str], typer.Option("--dataset", help="Golden set with known-bad answers (repeatable)")],
    rubric: Annotated[
        list[str] | None,
        typer.Option("--rubric", help="Rubric(s) to validate under; pairwise rubrics are asked in both orders"),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name served at the judge URL")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Validate on the first N items of each set")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Concurrent requests to the judge")] = None,
    logprobs: Annotated[
        bool | None,
        typer.Option(
            "--logprobs/--no-logprobs",
            help="Read probability-weighted scores too and report both readings (default JUDGEWATCH_JUDGE_LOGPROBS)",
        ),
    ] = None,
    probes: Annotated[
        bool,
        typer.Option(
            help="Also run the bias probes (verbosity, confidence, reference sensitivity, prompt injection, "
            "consistency); without them a pointwise judge is recorded 'not probed', never trustworthy"
        ),
    ] = True,
    probe_items: Annotated[
        int, typer.Option(min=1, help="Golden items per set the probes use (12 judge calls each)")
    ] = 20,
    min_auroc: Annotated[float | None, typer.Option(help="Override JUDGEWATCH_TRUST_MIN_AUROC")] = None,
    database_url: DatabaseUrl = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored records as JSON")] = False,
) -> None:
    """Judge each set's known-good and known-bad answers; store and print AUROC, gap, unscored rate per criterion. With
    `--logprobs` an LLM judge's probability-weighted scores get their own AUROC line under the integers'. Then the bias
    probes on the same sets (one line per probe); a judge over a probe's limit is untrustworthy."""
    from judgewatch.contract.rubric import RubricError, load_rubric
    from judgewatch.regression.golden import GoldenSetError, load_golden_set
    from judgewatch.settings import get_settings
    from judgewatch.trust.policy import policy_from_settings
    from judgewatch.trust.runs import JudgeUnreachable, judges_under_test, validate

    settings = get_settings()
    if logprobs is not None:
        settings = settings.model_copy(update={"judge_logprobs": logprobs})
    policy = policy_from_settings(settings, min_auroc=min_auroc)
    try:
        rubrics = [load_rubric(name, settings.rubrics_dir) for name in (rubric or ["answer_quality"])]
        sets = [load_golden_set(name, datasets_dir=settings.datasets_dir) for name in dataset]
    except (RubricError, GoldenSetError, ValueError) as exc:
        fail(exc)
    reports: list[ValidationReport] = []
    probe_count = min(probe_items, limit or probe_items) if probes else None

    async def run_all(engine: Engine) -> None:
        for one in judges_under_test(judge, settings, model, concurrency, engine):
            try:
                reports.append(
                    await validate(
                        one, rubrics, sets, engine=engine, policy=policy, limit=limit, probe_items=probe_count
                    )
                )
            finally:
                await one.aclose()

    with store(database_url) as engine:
        try:
            asyncio.run(run_all(engine))
        except (JudgeUnreachable, ValueError) as exc:
            fail(exc)
    if as_json:
        rows = [r.model_dump(mode="json") for report in reports for r in report.records]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        for report in reports:
            _print_report(report, policy)
    verdicts = [v.trustworthy for report in reports for v in report.verdicts]
    raise typer.Exit(1 if False in verdicts else 0)


@app.command("list")
def list_cmd(
    rubric: Annotated[str | None, typer.Option(help="Only this rubric")] = None,
    judge_name: Annotated[str | None, typer.Option("--judge-name", help="Only this judge (model name)")] = None,
    database_url: DatabaseUrl = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON")] = False,
) -> None:
    """Every judge configuration measured: trust per rubric, evidence, dataset and tier, vs the reference judge."""
    from judgewatch.settings import get_settings
    from judgewatch.trust.leaderboard import leaderboard, table
    from judgewatch.trust.policy import policy_from_settings

    with store(database_url) as engine:
        rows = leaderboard(engine, policy_from_settings(get_settings()), rubric=rubric, judge_name=judge_name)
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in rows], ensure_ascii=False, indent=2))
        return
    if not rows:
        typer.echo(
            f"no judge has been measured in {store_label(database_url)} yet: run "
            "`judgewatch judges validate --judge ... --dataset ...`"
        )
        return
    headers, cells = table(rows)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    for row in [headers, *cells]:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@app.command("limit")
def limit_cmd(
    url: Annotated[str, typer.Argument(help="The judge (or serving tier) endpoint, e.g. http://127.0.0.1:8011/v1")],
    slots: Annotated[int, typer.Argument(min=1, help="Concurrent requests it can serve (vLLM's max_num_seqs)")],
) -> None:
    """Create or resize the Prefect global concurrency limit `judge:<host:port>` every flow run's calls share."""
    from judges.budget import set_limit

    try:
        name = asyncio.run(set_limit(url, slots))
    except (RuntimeError, ValueError) as exc:
        fail(exc)
    except Exception as exc:  # the Prefect server refused or could not be reached
        fail(f"could not set the limit for {url} on the Prefect server: {exc}")
    typer.echo(f"global concurrency limit {name}: {slots} slots")


def _print_alignment(result: AlignResult, holdout: float) -> None:
    from judgewatch.trust.probe_policy import fmt

    comparison = result.comparison
    typer.echo(f"labels: {comparison.labels}")
    typer.echo(
        f"built from {comparison.fit_items} items, measured on {comparison.held_out_items} held out (by a hash of "
        f"the question, share {holdout:.2f}); {comparison.built}"
    )
    typer.echo(
        f"aligned {result.aligned.kind}:{result.aligned.name} config {result.aligned.config_hash} "
        f"(current {result.current.config_hash})"
    )
    typer.echo(f"{comparison.measure}, on the held-out items (95% paired bootstrap):")
    for name, fig in comparison.criteria.items():
        low, high = fig.interval
        note = f"  scores differ on {fig.changed}" if fig.decisive else "  (too few items to decide)"
        typer.echo(
            f"  {name:<13} n {_n(fig.n, fig.n_effective):<4} current {fmt(fig.current)} "
            f"{_pair(fig.current_interval)}  aligned {fmt(fig.aligned)} {_pair(fig.aligned_interval)}  "
            f"difference {fmt(fig.difference, '+.2f')} [{fmt(low, '+.2f')}, {fmt(high, '+.2f')}]{note}"
        )
    dropped = comparison.examples_dropped_on
    typer.echo(
        f"unscored on the held-out items: current {comparison.unscored['current']}, aligned "
        f"{comparison.unscored['aligned']}"
        + (f"; {dropped} held-out prompts left examples out to fit" if dropped else "")
    )


def _n(n: int, effective: float) -> str:
    """n, and the effective n under the items' routing weights where it is smaller."""
    return str(n) if effective >= n - 0.05 else f"{n} (effective {effective:.1f})"


def _pair(interval: tuple[float | None, float | None]) -> str:
    from judgewatch.trust.probe_policy import fmt

    return f"[{fmt(interval[0])}, {fmt(interval[1])}]"


@app.command("align")
def align_cmd(
    judge: Annotated[str, typer.Option("--judge", help="'reference' or one OpenAI-compatible base URL")],
    rubric: Annotated[str, typer.Option(help="The rubric whose reviewers' labels it learns from")] = "answer_quality",
    model: Annotated[str | None, typer.Option(help="Model name served at the judge URL")] = None,
    holdout: Annotated[
        float, typer.Option(min=0.1, max=0.9, help="Share of the labelled items held out to measure on")
    ] = 0.5,
    max_examples: Annotated[int, typer.Option(min=1, help="Few-shot examples an LLM judge gets at most")] = 8,
    switch: Annotated[
        bool, typer.Option("--switch", help="Use the aligned configuration from now on, if it is accepted")
    ] = False,
    database_url: DatabaseUrl = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the configuration and comparison as JSON")] = False,
) -> None:
    """Build an aligned configuration of one judge from the reviewers' labels of one rubric, and measure it. An LLM
    judge gets the reviewed disagreements as few-shot examples; the offline reference judge gets its faithfulness
    combiners refit. Both configurations are measured on held-out labelled items the aligned one was not built from.
    Exit 0: accepted (in use only with --switch, which is recorded); 1: refused, the current judge stays; 2: nothing
    could be built or measured."""
    from judges.factory import describe, is_healthy, judge_links
    from judgewatch.contract.rubric import RubricError, load_rubric
    from judgewatch.settings import get_settings
    from judgewatch.storage.alignments import switch_alignment
    from judgewatch.storage.db import session_scope
    from judgewatch.trust.align import AlignableJudge, CannotAlign, align_judge
    from judgewatch.trust.policy import policy_from_settings

    settings = get_settings()
    try:
        rubric_obj = load_rubric(rubric, settings.rubrics_dir)
        if "," in judge:
            raise ValueError(f"--judge: align one judge at a time, got {judge!r}")
    except (RubricError, ValueError) as exc:
        fail(exc)

    async def run(engine: Engine) -> AlignResult:
        [current] = judge_links(judge, settings, model, fallback_reference=False, rubric=rubric_obj, engine=engine)
        try:
            if not isinstance(current, AlignableJudge):
                raise CannotAlign(f"rubric {rubric_obj.name} has only check criteria: there is no judge to align")
            if not await is_healthy(current):
                raise CannotAlign(f"{describe(current)} is not reachable (health check failed)")
            policy = policy_from_settings(settings)
            return await align_judge(
                engine, rubric_obj, current, policy=policy, holdout=holdout, max_examples=max_examples
            )
        finally:
            await current.aclose()

    with store(database_url) as engine:
        try:
            result = asyncio.run(run(engine))
            accepted = result.comparison.accepted
            if switch and accepted:
                with session_scope(engine, write=True) as session:
                    switch_alignment(session=session, row_id=result.row_id)
        except (CannotAlign, ValueError) as exc:
            fail(exc)
    if as_json:
        parts = ("current", "aligned", "alignment", "comparison")
        payload = {part: getattr(result, part).model_dump(mode="json") for part in parts}
        typer.echo(json.dumps({**payload, "switched": switch and accepted}, ensure_ascii=False, indent=2))
    else:
        _print_alignment(result, holdout)
        if not accepted:
            typer.echo(f"{result.comparison.reason}; the current judge is kept")
        elif switch:
            typer.echo(f"{result.comparison.reason}; switched: the {result.alignment.kind} judge uses it from now on")
        else:
            typer.echo(f"{result.comparison.reason}; not switched: run again with --switch to use it")
    raise typer.Exit(0 if accepted else 1)


@app.command("unalign")
def unalign_cmd(
    kind: Annotated[str, typer.Option("--kind", help="'openai' (an LLM judge) or 'reference'")],
    rubric: Annotated[str, typer.Option(help="The rubric")] = "answer_quality",
    database_url: DatabaseUrl = None,
) -> None:
    """Stop using the alignment switched on for one judge kind under one rubric (recorded with the time)."""
    from judgewatch.storage.alignments import end_alignment
    from judgewatch.storage.db import session_scope

    with store(database_url) as engine, session_scope(engine, write=True) as session:
        ended = end_alignment(session=session, rubric_name=rubric, judge_kind=kind)
    if not ended:
        typer.echo(f"no {kind} judge alignment is in use under rubric {rubric} in {store_label(database_url)}")
        raise typer.Exit(1)
    typer.echo(f"the {kind} judge grades rubric {rubric} unaligned from now on")
