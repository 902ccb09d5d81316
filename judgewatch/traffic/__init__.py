"""Production traffic: read request logs (files or SQL), sample them deterministically, scrub PII.

Storage-free on purpose: the caller persists interactions, quarantined rows and watermarks.

    read = read_source(load_source_config("source.yaml"), since=last_watermark)
    sampler = Sampler(read.config, on_quarantine=store_quarantined)
    for pick in sampler.run(read):
        store(pick)
    save(read.watermark); log(sampler.stats)
"""

from judgewatch.contract.messages import ChatMessage as Message
from judgewatch.contract.pii import PiiKind, Scrubber, ScrubResult, scrub
from judgewatch.hashing import interaction_id
from judgewatch.traffic.config import (
    FieldMapping,
    FilterConfig,
    PiiConfig,
    SamplingConfig,
    SourceConfig,
    SourceConfigError,
    load_source_config,
    parse_source_config,
)
from judgewatch.traffic.records import (
    QuarantineReason,
    RejectedTrafficRow,
    TrafficRow,
)
from judgewatch.traffic.sampling import Pick, Sampler, SampleStats, StratumStats, decide
from judgewatch.traffic.sources import SourceRead, read_source
from judgewatch.traffic.watermark import FileMark, Watermark

__all__ = [
    "FieldMapping",
    "FileMark",
    "FilterConfig",
    "Message",
    "Pick",
    "PiiConfig",
    "PiiKind",
    "QuarantineReason",
    "RejectedTrafficRow",
    "SampleStats",
    "Sampler",
    "SamplingConfig",
    "ScrubResult",
    "Scrubber",
    "SourceConfig",
    "SourceConfigError",
    "SourceRead",
    "StratumStats",
    "TrafficRow",
    "Watermark",
    "decide",
    "interaction_id",
    "load_source_config",
    "parse_source_config",
    "read_source",
    "scrub",
]
