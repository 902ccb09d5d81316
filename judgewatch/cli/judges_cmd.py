"""`judgewatch judges validate|list|limit`: measure a judge, the leaderboard of judges, a judge's shared budget.

`validate` exits 0 when every judge measured is trustworthy (or the evidence is inconclusive or not probed, with
a warning that says so),
1 when one is measured untrustworthy, 2 when nothing could be measured (unreachable judge, unknown rubric or
golden set, unusable store).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from judgewatch.cli._store import DatabaseUrl, open_store_or_exit, store_label

if TYPE_CHECKING:
    from judgewatch.trust.policy import TrustPolicy
    from judgewatch.trust.runs import ValidationReport

# The trust modules pull in scipy and HF datasets (about a second): they are imported by the commands that use
# them, so every other `judgewatch` command (and `--help`) starts without paying for them.

app = typer.Typer(help="Judges: measure their trust on known answers, list what was measured.", no_args_is_help=True)


def _print_report(report: ValidationReport, policy: TrustPolicy) -> None:
    from judgewatch.trust.policy import dataset_label
    from judgewatch.trust.probe_policy import probe_lines

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
            line = f"  {name:<13} AUROC {_num(fig.get('auroc'))} [{_num(fig.get('low'))}, {_num(fig.get('high'))}]"
            if fig.get("gap") is not None:
                line += f"  gap {fig['gap']:+.2f}"
            if fig.get("position_consistency") is not None:
                line += f"  position consistency {fig['position_consistency']:.0%} (A chosen {_pct(fig.get('a_rate'))})"
            line += f"  unscored {_pct(fig.get('unscored_rate'))}"
            if name in reference and record.judge_kind != "reference":
                line += f"  | reference judge AUROC {_num(reference[name].get('auroc'))}"
            typer.echo(line)
            weighted = fig.get("expected")
            if weighted:
                typer.echo(
                    f"  {'':<13} AUROC {_num(weighted.get('auroc'))} [{_num(weighted.get('low'))}, "
                    f"{_num(weighted.get('high'))}] probability-weighted  gap {_signed(weighted.get('gap'))}  "
                    f"without a float {_pct(weighted.get('unscored_rate'))}"
                )
        reasons = record.figures.get("unscored_reasons") or {}
        if reasons:
            typer.echo("  unscored: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))
        window = record.figures.get("context_window") or {}
        if window.get("items_trimmed") or window.get("answers_too_long"):
            typer.echo(
                f"  context window: {window['items_trimmed']} of {record.n_items} items needed their references "
                f"trimmed ({window['answers_trimmed']} answers), {window['answers_too_long']} answers too long"
            )
    for verdict in report.verdicts:
        typer.echo(("" if verdict.trustworthy else "WARNING: ") + verdict.summary)


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _signed(value: Any) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{value:.0%}"


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
    """Judge each set's known-good and known-bad answers; store and print AUROC, gap, unscored rate per criterion.

    With `--logprobs` an LLM judge's probability-weighted scores get their own AUROC line under the integers'.
    Then the bias probes on the same sets (one line per probe); a judge over a probe's limit is untrustworthy.
    """
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
        under_test = judges_under_test(judge, settings, model, concurrency)
    except (RubricError, GoldenSetError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    engine = open_store_or_exit(database_url or settings.effective_database_url)
    reports: list[ValidationReport] = []
    probe_count = min(probe_items, limit or probe_items) if probes else None

    async def run_all() -> None:
        for one in under_test:
            try:
                reports.append(
                    await validate(
                        one, rubrics, sets, engine=engine, policy=policy, limit=limit, probe_items=probe_count
                    )
                )
            finally:
                await one.aclose()

    try:
        asyncio.run(run_all())
    except (JudgeUnreachable, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    finally:
        engine.dispose()
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

    settings = get_settings()
    engine = open_store_or_exit(database_url or settings.effective_database_url)
    try:
        rows = leaderboard(engine, policy_from_settings(settings), rubric=rubric, judge_name=judge_name)
    finally:
        engine.dispose()
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
    typer.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in cells:
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
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except Exception as exc:  # the Prefect server refused or could not be reached
        typer.echo(f"error: could not set the limit for {url} on the Prefect server: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"global concurrency limit {name}: {slots} slots")
