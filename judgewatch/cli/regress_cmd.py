"""`judgewatch regress ...` (the post-release gate, run in this process) and `judgewatch baseline accept|list`.
Exit 0 pass, 1 regression, 2 could not evaluate: anything unexpected is exit 2 with one line, never a silent pass."""

from __future__ import annotations

import getpass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from judgewatch.cli._flow import echo_result, flow_result, prefect_defaults, run_or_exit
from judgewatch.cli._store import DatabaseUrl, fail, open_store_or_exit, store_label
from judgewatch.regression.options import DEFAULTS, GateOptions
from judgewatch.url_secrets import hide_params

if TYPE_CHECKING:
    from judgewatch.regression.report import RegressionReport

baseline_app = typer.Typer(
    help="Release baselines: the release each tier's next releases are compared with.", no_args_is_help=True
)


def _help(option: str) -> str:
    """An option's help text, from the one model of the gate's options."""
    return GateOptions.model_fields[option].description or ""


def run_regression(**params: Any) -> dict[str, Any]:
    """Run the flow in-process and return its gate result (see `post_release_regression` for parameters)."""
    prefect_defaults()
    from flows.regression import post_release_regression

    run = post_release_regression(**hide_params(params), fail_on_gate=False)
    return flow_result(run, flow="regression", result="a gate result")


def write_ci_files(report: RegressionReport, *, junit: str | None, summary_md: str | None) -> dict[str, str]:
    """The decision as JUnit XML and as a pull-request comment's Markdown, where asked; {kind: path} written. The
    flow writes them beside its report; the command again when the flow raised (exit 2)."""
    from judgewatch.cli._output import partial_output
    from judgewatch.regression.junit import render_junit
    from judgewatch.regression.pr_summary import render_summary

    written = {}
    for kind, path, render in (("junit", junit, render_junit), ("summary_md", summary_md, render_summary)):
        if path:
            with partial_output(Path(path)) as out:
                out.write(render(report))
            written[kind] = path
    return written


def _could_not_evaluate(exc: Exception, release: str, margin: float, ci_files: dict[str, str | None]) -> str:
    """The one line for a gate that raised; the CI files asked for say the same (exit 2)."""
    problem = f"{type(exc).__name__}: {exc}"
    if any(ci_files.values()):
        from datetime import UTC, datetime

        from judgewatch.regression.gate import decide
        from judgewatch.regression.report import RegressionReport

        gate = decide([], margin=margin, problems=[problem])
        report = RegressionReport(release, datetime.now(UTC), {}, gate, margin, DEFAULTS.max_unscored_share)
        try:
            write_ci_files(report, **ci_files)
        except Exception as write_exc:  # the gate's own failure stays the line to read
            return f"COULD NOT EVALUATE (exit 2): {problem} (and the CI files could not be written: {write_exc})"
    return f"COULD NOT EVALUATE (exit 2): {problem}"


def print_result(result: dict[str, Any]) -> None:
    err = result["exit_code"] != 0
    typer.echo(result["summary"], err=err)
    for kind in ("reasons", "warnings", "notes"):
        for entry in result.get(kind, []):
            typer.echo(f"  {kind[:-1]}: {entry}", err=err)
    if result.get("cost"):
        typer.echo(f"judge cost of this release so far: {result['cost']['text']}")
    typer.echo(f"report: {result['report']} (JSON: {result['report_json']})")
    for kind in ("junit", "summary_md"):
        if result.get(kind):
            typer.echo(f"{kind}: {result[kind]}")
    if result.get("accepted_unvalidated"):  # the last line a release pipeline's log shows
        typer.echo(f"WARNING: {result['accepted_unvalidated']}")


def regress(
    release: Annotated[str, typer.Option(help="The release under test (any id: tag, version, commit)")],
    dataset: Annotated[list[str], typer.Option(help="Golden set name under datasets/ (or a folder/.jsonl path)")],
    tier: Annotated[
        list[str] | None, typer.Option(help="A live tier: NAME=URL#MODEL (OpenAI-compatible base URL)")
    ] = None,
    answers: Annotated[
        list[str] | None,
        typer.Option(
            help="A tier from recorded answers: NAME=FILE (JSONL with id and answer; may answer part of the sets)"
        ),
    ] = None,
    tiers_file: Annotated[
        Path | None,
        typer.Option(
            "--tiers", help="A tiers YAML file: live tiers with key variable, headers, prompt template, params"
        ),
    ] = None,
    judge: Annotated[
        str | None, typer.Option(help="'reference' or the judge's base URL (default: the configured judge)")
    ] = None,
    baseline: Annotated[str, typer.Option(help=_help("baseline"))] = DEFAULTS.baseline,
    margin: Annotated[float, typer.Option(min=0.0, help=_help("margin"))] = DEFAULTS.margin,
    report: Annotated[Path | None, typer.Option(help="Markdown report path (JSON beside it)")] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Also write the decision as JUnit XML: a test case per tier x criterion")
    ] = None,
    summary_md: Annotated[
        Path | None, typer.Option(help="Also write a short Markdown summary for a pull-request comment")
    ] = None,
    rubric: Annotated[str, typer.Option(help="Rubric name or YAML path")] = "answer_quality",
    max_unscored_share: Annotated[
        float, typer.Option("--max-unscored", min=0.0, max=1.0, help=_help("max_unscored_share"))
    ] = DEFAULTS.max_unscored_share,
    baseline_tier: Annotated[str | None, typer.Option(help=_help("baseline_tier"))] = DEFAULTS.baseline_tier,
    gap_margin: Annotated[float | None, typer.Option(min=0.0, help=_help("gap_margin"))] = DEFAULTS.gap_margin,
    accept_unvalidated_judge: Annotated[
        bool,
        typer.Option(
            help="Use a judge that failed or lacks validation (skips measuring it): said first in the report and "
            "last in the output"
        ),
    ] = DEFAULTS.accept_unvalidated_judge,
    concurrency: Annotated[int, typer.Option(min=1, help=_help("concurrency"))] = DEFAULTS.concurrency,
    answer_max_tokens: Annotated[
        int, typer.Option(min=1, help=_help("answer_max_tokens"))
    ] = DEFAULTS.answer_max_tokens,
    database_url: DatabaseUrl = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the gate result as JSON")] = False,
) -> None:
    """The post-release gate: exit 0 pass, 1 regression, 2 could not evaluate."""
    options = {name: value for name, value in locals().items() if name in GateOptions.model_fields}
    paths = {"tiers_file": tiers_file, "report": report, "junit": junit, "summary_md": summary_md}
    files = {name: str(path) if path else None for name, path in paths.items()}
    ci_files = {"junit": files["junit"], "summary_md": files["summary_md"]}

    def gate() -> dict[str, Any]:
        tiers = {"tiers": list(tier or []), "answers": list(answers or [])}
        return run_regression(
            release=release, datasets=list(dataset), judge=judge, rubric=rubric, database_url=database_url, **tiers,
            **options, **files,
        )  # fmt: skip

    # the gate must fail loudly, never crash into an ambiguous exit code
    failure = partial(_could_not_evaluate, release=release, margin=margin, ci_files=ci_files)
    result = run_or_exit(gate, what="regression flow", failure=failure)
    echo_result(result, json_output=json_output, show=print_result)
    if json_output and result.get("accepted_unvalidated"):  # stdout stays one JSON document; the log says it last
        typer.echo(f"WARNING: {result['accepted_unvalidated']}", err=True)
    raise typer.Exit(int(result["exit_code"]))


@baseline_app.command("accept")
def accept(
    release: Annotated[str, typer.Option(help="The release to accept as baseline")],
    tier: Annotated[str | None, typer.Option(help="Only this tier (default: every stored tier of the release)")] = None,
    by: Annotated[str | None, typer.Option(help="Who accepts it (default: the current user)")] = None,
    note: Annotated[str | None, typer.Option(help="Why, for the record")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Mark a release as the baseline later releases of its tier(s) are compared with."""
    from judgewatch.storage.db import session_scope
    from judgewatch.storage.releases import ReleaseError, accept_baseline

    try:
        with session_scope(open_store_or_exit(database_url), write=True) as session:
            rows = accept_baseline(session=session, release=release, tier=tier, by=by or getpass.getuser(), note=note)
            accepted = [(r.tier, r.accepted_by) for r in rows]
    except ReleaseError as exc:
        fail(f"{exc} (store: {store_label(database_url)})")
    for tier_name, who in accepted:
        typer.echo(f"accepted: release {release} is the baseline of tier {tier_name} (by {who})")


@baseline_app.command("list")
def list_releases(
    tier: Annotated[str | None, typer.Option(help="Only this tier")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Every stored release tier, newest first; `*` marks each tier's current baseline."""
    from judgewatch.storage.db import session_scope
    from judgewatch.storage.releases import accepted_baseline, get_release_tiers, latest_gate_decision

    with session_scope(open_store_or_exit(database_url)) as session:
        rows = get_release_tiers(session=session, tier=tier)
        current = {r.tier: accepted_baseline(session=session, tier=r.tier) for r in rows}
        gates = {r.release: latest_gate_decision(session=session, release=r.release) for r in rows}
        lines = []
        for r in rows:
            base = current.get(r.tier)
            mark = "*" if base is not None and base.id == r.id else " "
            accepted = f"accepted {r.accepted_at:%Y-%m-%d %H:%M} by {r.accepted_by}" if r.accepted_at else "-"
            gate = gates.get(r.release)
            outcome = f"gate exit {gate.exit_code} ({gate.outcome})" if gate else "no gate decision"
            lines.append(f"{mark} {r.release:<16} {r.tier:<12} {accepted:<38} {outcome:<28} {r.source}")
    if not lines:
        typer.echo(f"no releases stored in {store_label(database_url)} yet: run `judgewatch regress` first")
        return
    typer.echo(f"  {'release':<16} {'tier':<12} {'baseline':<38} {'last gate':<28} answers")
    typer.echo("\n".join(lines))


def standalone_app() -> typer.Typer:
    """`regress` and `baseline` alone (for tests)."""
    app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
    app.command("regress")(regress)
    app.add_typer(baseline_app, name="baseline")
    return app
