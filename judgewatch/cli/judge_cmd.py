"""`judgewatch judge`: every input row yields a verdict (written and stored) or a quarantined row; a second run of
the same input, rubric and judge resumes. Exit codes: the README's table (docs/judging.md: degraded, too few)."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from judgewatch.cli._store import CannotRun, DatabaseUrl, fail, open_store

# The command's module is imported for `--help`: openai, SQLAlchemy and the judging core load when it runs.
if TYPE_CHECKING:
    from sqlalchemy import Engine

    from judges.base import Judge
    from judgewatch.contract.items import JudgeItem
    from judgewatch.contract.rubric import Rubric
    from judgewatch.contract.verdicts import Verdict
    from judgewatch.judging.pipeline import JudgingSummary
    from judgewatch.judging.run import JudgingRun
    from judgewatch.settings import Settings
    from judgewatch.storage.quarantine import QuarantineRecord

QUARANTINE_LINES_SHOWN = 20
EXIT_DEGRADED = 3  # the run finished, but mostly without the configured judge: not a success
EXIT_TOO_FEW_JUDGED = 4  # the run finished, but scored less than the floor share of its rows: not a success


def judge(
    rubric: Annotated[str, typer.Option(help="Rubric name (rubrics/<name>.yaml) or path to a rubric YAML")],
    input: Annotated[Path, typer.Option("--input", help="JSONL: id, question, answer, optional references")],
    output: Annotated[Path, typer.Option(help="JSONL of verdicts, one row per judged input row, in input order")],
    judge: Annotated[
        str | None,
        typer.Option("--judge", help="'reference', an OpenAI-compatible base URL, or URLs separated by commas"),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name served at the judge URL")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Concurrent requests per judge URL")] = None,
    database_url: DatabaseUrl = None,
    fallback_reference: Annotated[
        bool, typer.Option(help="Fall back to the offline reference judge when the URL judges are down")
    ] = True,
    resume: Annotated[
        bool,
        typer.Option(help="Reuse the verdicts stored by an earlier run of the same input, rubric and judge"),
    ] = True,
) -> None:
    """Judge every row of a JSONL file with a rubric; write and store one verdict per row."""
    # Start-up (imports, the rubric, the store) allocates what the process keeps: no collection until the items
    # are judged (collections during the imports were 0.1 s of a 1.5 s start; `_run` enables it again).
    collecting = gc.isenabled()
    gc.disable()
    try:
        from judgewatch.cli._output import output_lock
        from judgewatch.contract.rubric import RubricError, load_rubric
        from judgewatch.judging.costs import run_cost
        from judgewatch.redact import mask_urls_in
        from judgewatch.settings import get_settings

        settings = get_settings()
        repairs: list[str] = []  # rows changed to be storable (NUL removed), by line
        try:
            _check_paths(input, output)
            if judge is not None:
                _check_spec(judge)
            rubric_obj = load_rubric(rubric, settings.rubrics_dir)
            _check_rubric(rubric_obj, settings.data_dir / "rubric-checks")
            identity = _content_hash(input)
            engine = open_store(database_url or settings.effective_database_url)
            try:
                with output_lock(output):  # one run at a time writes this output
                    summary, quarantined, run = asyncio.run(
                        _run(
                            rubric_obj,
                            input,
                            output,
                            engine,
                            identity,
                            settings=settings,
                            spec=judge,
                            model=model,
                            concurrency=concurrency,
                            fallback_reference=fallback_reference,
                            repairs=repairs,
                            resume=resume,
                            collecting=collecting,
                        )
                    )
                cost = run_cost(engine, run.run_id, settings) if run.run_id else None
            finally:
                engine.dispose()
        except (CannotRun, RubricError) as exc:
            fail(mask_urls_in(str(exc)))
        _print_summary(summary, quarantined, input, output, run)
        if cost is not None:
            typer.echo(f"judge cost: {cost}")
        for repair in repairs[:QUARANTINE_LINES_SHOWN]:
            typer.echo(f"  repaired {repair}")
        if len(repairs) > QUARANTINE_LINES_SHOWN:
            typer.echo(f"  ... and {len(repairs) - QUARANTINE_LINES_SHOWN} more repaired rows")
        if run.degraded:
            raise typer.Exit(EXIT_DEGRADED)
        if too_few := _too_few_judged(summary, len(quarantined), run.reused, settings.run_min_judged_share):
            fail(too_few, EXIT_TOO_FEW_JUDGED)
    finally:
        if collecting:
            gc.enable()


def _check_rubric(rubric: Rubric, cache_dir: Path) -> None:
    """`rubric check` before the first call: a template that cannot render fails the run, not every item (a
    rubric that passed is not checked again until it or the checker changes)."""
    from judgewatch.contract.rubric_check import check_rubric_cached

    if problems := check_rubric_cached(rubric, cache_dir):
        more = f" (and {len(problems) - 1} more: run `judgewatch rubric check`)" if len(problems) > 1 else ""
        raise CannotRun(f"the rubric fails its check: {problems[0]}{more}")


def _too_few_judged(summary: JudgingSummary, quarantined: int, reused: int, floor: float) -> str | None:
    """Why the run judged too little to count as a success (None when it judged enough): its final verdicts
    (scored, or not applicable to the item; `reused` ones are final) over the rows it read, quarantined included."""
    from judgewatch.contract.verdicts import UnscoredReason

    rows = summary.items + reused + quarantined
    scored = summary.by_status.get("scored", 0)
    not_applicable = (UnscoredReason.no_reference.value, UnscoredReason.not_applicable.value)
    final = reused + scored + sum(summary.by_unscored_reason.get(reason, 0) for reason in not_applicable)
    if rows == 0 or final / rows >= floor:
        return None
    unscored = ", ".join(f"{k} {v}" for k, v in sorted(summary.by_unscored_reason.items())) or "none"
    again = ". The unscored items are sent to the judge again on the next run" if summary.by_unscored_reason else ""
    return (
        f"only {final} of {rows} rows judged ({final / rows:.0%}), below the floor of {floor:.0%} "
        f"(JUDGEWATCH_RUN_MIN_JUDGED_SHARE); unscored: {unscored}; quarantined: {quarantined}{again}"
    )


def _check_paths(input_path: Path, output: Path) -> None:
    """Refuse, before anything is read, an output that would overwrite the input or is a directory."""
    if output.resolve() == input_path.resolve():
        raise CannotRun(f"--output {output} is the --input file: writing verdicts would destroy the input")
    if output.is_dir():
        raise CannotRun(f"--output {output} is a directory: give a file path, e.g. {output / 'verdicts.jsonl'}")


def _check_spec(spec: str) -> None:
    from judges.factory import parse_judge_spec

    try:
        parse_judge_spec(spec)
    except ValueError as exc:
        raise CannotRun(str(exc)) from exc


def _content_hash(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise CannotRun(f"cannot read input file {path}: {exc.strerror or exc}") from exc


async def _connect(
    spec: str | None,
    settings: Settings,
    model: str | None,
    concurrency: int | None,
    fallback_reference: bool,
    rubric: Rubric,
    engine: Engine,
) -> tuple[Judge, Judge]:
    """The chain of reachable judges and the configured (first) one; CannotRun when none answers its health check."""
    from judges.factory import REFERENCE, chain, describe, healthy_links, judge_links

    try:
        links = judge_links(
            spec, settings, model, concurrency, fallback_reference=fallback_reference, rubric=rubric, engine=engine
        )
    except ValueError as exc:  # a malformed --judge
        raise CannotRun(str(exc)) from exc
    up, down = await healthy_links(links)
    for link in down:
        await link.aclose()
    if not up:
        names = ", ".join(describe(link) for link in down)
        if len(down) == 1:
            raise CannotRun(
                f"{names} is not reachable (health check failed) and no fallback is configured; start it, "
                f"or pass --judge {REFERENCE} (or leave --fallback-reference on) to use the offline reference judge"
            )
        raise CannotRun(f"no judge is reachable (health checks failed): {names}")
    for link in down:
        typer.echo(f"warning: {describe(link)} is not reachable; judging with {describe(up[0])} instead", err=True)
    return chain(up), links[0]


async def _run(
    rubric: Rubric,
    input_path: Path,
    output: Path,
    engine: Engine,
    identity: str,
    *,
    settings: Settings,
    spec: str | None,
    model: str | None,
    concurrency: int | None,
    fallback_reference: bool,
    repairs: list[str],
    resume: bool,
    collecting: bool,
) -> tuple[JudgingSummary, list[QuarantineRecord], JudgingRun]:
    from sqlalchemy.exc import SQLAlchemyError

    from judges.factory import describe
    from judgewatch.cli._output import partial_output
    from judgewatch.contract.raw_rows import InputFileError
    from judgewatch.judging.input_rows import input_source, read_judge_input
    from judgewatch.judging.pipeline import DEFAULT_MAX_IN_FLIGHT
    from judgewatch.judging.run import JudgingRun
    from judgewatch.redact import mask_urls_in
    from judgewatch.storage.db import session_scope
    from judgewatch.storage.quarantine import QuarantineRecord, quarantine_rows
    from judgewatch.storage.run_states import RunKind

    try:
        reader = read_judge_input(input_path, max_field_bytes=settings.max_field_bytes)
    except InputFileError as exc:
        raise CannotRun(str(exc)) from exc
    except OSError as exc:
        raise CannotRun(f"cannot read input file {input_path}: {exc.strerror or exc}") from exc
    judge_obj, configured = await _connect(spec, settings, model, concurrency, fallback_reference, rubric, engine)
    quarantined: list[QuarantineRecord] = []

    def items() -> Iterator[JudgeItem]:
        for row in reader:
            if isinstance(row, QuarantineRecord):
                quarantined.append(row)
            else:
                yield row

    params = {
        "judge": mask_urls_in(spec) if spec else "settings",
        "model": model,
        "concurrency": concurrency,
        "input": str(input_path),
    }
    run = JudgingRun(
        engine,
        kind=RunKind.file,
        name=input_path.name,
        identity=identity,
        rubric=rubric,
        judge=judge_obj,
        params=params,
        configured=configured,
    )
    run.extra["configured_judge"] = describe(configured)
    # The modules are loaded: frozen while the items are judged, they are not walked again by every full
    # collection (0.19 s of CPU on 1,000 items, bench/README.md); given back to the collector after.
    gc.freeze()
    if collecting:  # as it was before the start-up
        gc.enable()
    try:
        with run:
            with partial_output(output) as out:

                def write(verdict: Verdict) -> None:
                    out.write(json.dumps(verdict.output_row(), ensure_ascii=False) + "\n")

                result = await run.judge_new(
                    items(),
                    source=input_source(input_path),
                    on_verdict=write,
                    collect=False,
                    max_in_flight=max(DEFAULT_MAX_IN_FLIGHT, 2 * (concurrency or settings.judge_concurrency)),
                    resume=resume,
                )
            with session_scope(engine) as session:
                quarantine_rows(session=session, records=quarantined, run_id=run.run_id)
            run.extra["quarantined"] = len(quarantined)
            if reader.repairs:
                run.extra["repaired"] = len(reader.repairs)
    except SQLAlchemyError as exc:
        raise CannotRun(f"storing verdicts failed: {str(exc).splitlines()[0]}") from exc
    finally:
        gc.unfreeze()
        await judge_obj.aclose()
    repairs.extend(reader.repairs)
    return result.summary, quarantined, run


def _print_summary(
    summary: JudgingSummary,
    quarantined: list[QuarantineRecord],
    input_path: Path,
    output: Path,
    run: JudgingRun,
) -> None:
    run_id, reused = run.run_id or "", run.reused  # an engine was given: the run is recorded
    if run.degraded:
        typer.echo(
            f"DEGRADED run (exit {EXIT_DEGRADED}): {run.degraded_summary()}; configured judge: "
            f"{run.extra.get('configured_judge')}. Run it again when the judge is back: its stored verdicts are "
            "reused, the others judged again."
        )
    unscored = summary.by_status.get("unscored", 0)
    reasons = ", ".join(f"{k}: {v}" for k, v in sorted(summary.by_unscored_reason.items()))
    line = f"judged {summary.items} rows in {summary.wall_s:.1f} s: {summary.by_status.get('scored', 0)} scored"
    line += f", {unscored} unscored" + (f" ({reasons})" if reasons else "")
    line += f"; {len(quarantined)} quarantined"
    if reused:
        line += f"; {reused} reused from an earlier run (not sent to the judge again)"
    typer.echo(line)
    if previous := run.extra.get("restarted_from"):
        typer.echo(f"resumed run {run_id}, which was {previous}")
    if summary.by_judge:
        typer.echo("judged by: " + ", ".join(f"{k} ({v})" for k, v in sorted(summary.by_judge.items())))
    if summary.latency_ms:
        typer.echo("latency ms: " + ", ".join(f"{k} {v:g}" for k, v in summary.latency_ms.items()))
    if quarantined:
        typer.echo(f"quarantined rows of {input_path} (stored with run {run_id}):")
        for record in quarantined[:QUARANTINE_LINES_SHOWN]:
            typer.echo(f"  {record.message}")
        if len(quarantined) > QUARANTINE_LINES_SHOWN:
            typer.echo(f"  ... and {len(quarantined) - QUARANTINE_LINES_SHOWN} more")
    typer.echo(f"verdicts: {output} (run {run_id})")
