"""Verdicts of traced interactions sent back to the tracing backend as OpenTelemetry GenAI evaluation results
(`JUDGEWATCH_OTEL_EVALUATIONS=true`, docs/ingest.md): one `gen_ai.evaluation.result` event per criterion, parented
to the judged span. The SDK sends them from its own thread, so a slow or down collector never holds up judging; it
is imported only when the setting is on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING

from judgewatch import __version__
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import Verdict
from judgewatch.settings import Settings, SettingsInvalid

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider

logger = logging.getLogger(__name__)

EVENT = "gen_ai.evaluation.result"
NOT_APPLICABLE = "not_applicable"  # the one score label: a criterion the judge found not applicable to the item


def evaluation_attributes(verdict: Verdict, rubric: Rubric, interaction_id: str) -> list[dict[str, str | float]]:
    """One event's attributes per criterion of `rubric`: its score, or the label `not_applicable`, or (unscored
    verdict) the unscored reason as `error.type`; with the judge's reason, the rubric, the judge, the interaction."""
    common: dict[str, str | float] = {
        "judgewatch.rubric.name": verdict.rubric.name,
        "judgewatch.rubric.version": verdict.rubric.version,
        "judgewatch.judge": f"{verdict.judge.kind}:{verdict.judge.name}",
        "judgewatch.interaction.id": interaction_id,
    }
    if verdict.reason:
        common["gen_ai.evaluation.explanation"] = verdict.reason
    events = []
    for criterion in rubric.criteria:
        attributes = {"gen_ai.evaluation.name": criterion.name, **common}
        score = verdict.scores.get(criterion.name)
        if verdict.unscored_reason is not None:
            attributes["error.type"] = verdict.unscored_reason.value
        elif score is not None:
            attributes["gen_ai.evaluation.score.value"] = float(score)
        else:
            attributes["gen_ai.evaluation.score.label"] = NOT_APPLICABLE
        events.append(attributes)
    return events


class EvaluationEvents:
    """Emits the evaluation events of stored verdicts through one SDK logger provider."""

    def __init__(self, provider: LoggerProvider) -> None:
        self.provider = provider
        self.logger = provider.get_logger("judgewatch", __version__)

    def emit(self, stored: list[tuple[str, Verdict]], *, spans: Mapping[str, tuple[str, str]], rubric: Rubric) -> None:
        """The events of each (interaction id, verdict) whose interaction is in `spans` (its trace and span id)."""
        from opentelemetry._logs import SeverityNumber
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

        try:
            for key, verdict in stored:
                if key not in spans:
                    continue
                trace_id, span_id = spans[key]
                judged = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True,
                                     trace_flags=TraceFlags(TraceFlags.SAMPLED))  # fmt: skip
                context = set_span_in_context(NonRecordingSpan(judged))
                now = time.time_ns()
                for attributes in evaluation_attributes(verdict, rubric, key):
                    self.logger.emit(timestamp=now, context=context, severity_number=SeverityNumber.INFO,
                                     event_name=EVENT, attributes=attributes)  # fmt: skip
        except Exception:  # the verdicts are stored: a telemetry failure must not fail the run
            logger.exception("could not queue the evaluation events of %d verdicts", len(stored))


def evaluation_events(settings: Settings) -> EvaluationEvents | None:
    """The process's evaluation events when `otel_evaluations` is on, else None (and nothing imported)."""
    if not settings.otel_evaluations:
        return None
    try:
        return open_evaluation_events()
    except ImportError as exc:
        raise SettingsInvalid(f"otel_evaluations is on, but {exc} (pip install 'judgewatch[otel]')") from None


@cache
def open_evaluation_events() -> EvaluationEvents:
    """One SDK logger provider per process, its exporter reading OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout)
    and OTEL_SERVICE_NAME (default "judgewatch"); it is shut down, sending what is queued, at exit."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    provider = LoggerProvider(resource=Resource.create({"service.name": "judgewatch"}))
    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    return EvaluationEvents(provider)
