"""`judgewatch demo`: the post-release gate's three outcomes on the embedded defaults (see cli/demo_run.py)."""

from __future__ import annotations

import os
import threading
from typing import Annotated, Any

import typer


def demo(
    quick: Annotated[bool, typer.Option(help="Use the 40-item mini golden sets (seconds instead of minutes)")] = False,
    judge_trust: Annotated[
        bool, typer.Option(help="Also measure the vLLM judge and show the gate refusing an untrustworthy judge")
    ] = True,
    judge_wait: Annotated[
        int,
        typer.Option(
            help="Seconds to wait for the vLLM judge to come up before measuring it (make demo starts it beside the "
            "gate steps, which need no vLLM)"
        ),
    ] = 0,
) -> None:
    """The gate's three outcomes, then the vLLM judge measured: r1 passes (baseline), r2 passes, r3 regresses,
    r4 cannot be evaluated (a tier endpoint is down), and the gate refuses the untrustworthy judge. Exit 1 if any
    outcome differs from that."""
    from judgewatch.settings import get_settings

    settings = get_settings()
    # Embedded defaults: the SQLite file and Prefect's ephemeral state both live under the data directory.
    if "PREFECT_API_URL" not in os.environ:
        os.environ.setdefault("PREFECT_HOME", str(settings.data_dir / "prefect"))
        os.makedirs(os.environ["PREFECT_HOME"], exist_ok=True)  # Prefect creates only the last level
    from judgewatch.cli._flow import prefect_defaults
    from judgewatch.cli.regress_cmd import run_regression

    prefect_defaults()
    warm_up = _start_prefect_in_background()
    from sqlalchemy.engine import make_url

    from judgewatch.cli.demo_run import run_demo
    from judgewatch.storage.db import make_engine
    from judgewatch.storage.migrations import migrate

    url = settings.effective_database_url
    engine = make_engine(url)
    migrate(engine)

    def run_gate(**params: Any) -> dict[str, Any]:
        warm_up.join()  # Prefect's ephemeral server, started while the answers were built and the judge measured
        return run_regression(**params, database_url=url)

    outcomes = run_demo(
        engine, settings, run_gate, typer.echo, quick=quick, judge_trust=judge_trust, judge_wait_s=judge_wait
    )
    typer.echo("")
    for o in outcomes:
        status = "ok" if o.as_expected else f"UNEXPECTED, expected {o.expected}"
        typer.echo(f"  {o.release:<3} {o.judge:<32} exit {o.result['exit_code']} ({status})")
    parsed = make_url(url)
    where = parsed.database if parsed.get_backend_name() == "sqlite" else parsed.render_as_string(hide_password=True)
    typer.echo(f"\ndatabase: {where}")
    typer.echo(f"reports:  {settings.data_dir / 'reports'}")
    typer.echo("\n".join(closing_hint(_open_review_items(engine), settings.review_share)))
    raise typer.Exit(0 if all(o.as_expected for o in outcomes) else 1)


HINT_ROLE = "owner"  # the role the closing hint creates: it must see every page the hint names


def closing_hint(routed: int, share: float) -> list[str]:
    """What to do next: an account that sees the pages named here, the review app, and the judge left running."""
    return [
        f"review:   {routed} verdicts routed to human review ({share:.0%} of the scored ones)",
        f"          .venv/bin/judgewatch reviewer add YOUR_NAME --role {HINT_ROLE}  # asks for a password",
        "          .venv/bin/judgewatch review-ui            # then open http://127.0.0.1:7860 and log in",
        f"          (an {HINT_ROLE} sees the queue and the Judges and Tiers pages; `--role reviewer` sees the queue "
        "only)",
        "judge:    the vLLM judge that `make demo` started keeps running; `make judge-down` stops it",
    ]


def _start_prefect_in_background() -> threading.Thread:
    """Start Prefect's ephemeral server (a new data folder migrates its database: the first run's slow part) in a
    thread, so it overlaps with building the answer files and measuring the reference judge. Joined before the first
    flow run: the server's `start()` marks itself running before it is healthy, so two callers must not race."""

    def start() -> None:
        if os.environ.get("PREFECT_API_URL"):
            return
        from prefect.server.api.server import SubprocessASGIServer

        try:
            SubprocessASGIServer().start()
        except Exception as exc:  # the flow's own start will try again and report it
            typer.echo(f"   (Prefect's ephemeral server did not start in the background: {exc})", err=True)

    thread = threading.Thread(target=start, name="prefect-warm-up", daemon=True)
    thread.start()
    return thread


def _open_review_items(engine: Any) -> int:
    from sqlalchemy import func, select

    from judgewatch.storage.db import session_scope
    from judgewatch.storage.review import ReviewItem

    with session_scope(engine) as session:
        return int(session.execute(select(func.count()).select_from(ReviewItem)).scalar_one())
