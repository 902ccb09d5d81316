"""Production traffic: read request logs (files, SQL or OTLP), sample them deterministically, scrub PII.

Storage-free on purpose: the caller persists the picks of `Sampler(config, on_quarantine=store).run(read)` for
`read = read_source(config, since=last_watermark)`, and saves `read.watermark` after them."""

from judgewatch.contract.pii import PiiKind, Scrubber, scrub
from judgewatch.hashing import interaction_id
from judgewatch.traffic.config import SourceConfig, SourceConfigError, load_source_config, parse_source_config
from judgewatch.traffic.records import QuarantineReason, RejectedTrafficRow, TrafficRow
from judgewatch.traffic.sampling import Pick, Sampler, decide
from judgewatch.traffic.sources import SourceRead, read_source
from judgewatch.traffic.watermark import FileMark, Watermark

__all__ = [
    "FileMark",
    "Pick",
    "PiiKind",
    "QuarantineReason",
    "RejectedTrafficRow",
    "Sampler",
    "Scrubber",
    "SourceConfig",
    "SourceConfigError",
    "SourceRead",
    "TrafficRow",
    "Watermark",
    "decide",
    "interaction_id",
    "load_source_config",
    "parse_source_config",
    "read_source",
    "scrub",
]
