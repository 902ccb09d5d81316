"""Production traffic: read request logs (files or SQL), sample them deterministically, scrub PII.

Storage-free on purpose: the caller persists interactions, quarantined rows and watermarks.

    read = read_source(load_source_config("source.yaml"), since=last_watermark)
    sampler = Sampler(read.config, on_quarantine=store_quarantined)
    for pick in sampler.run(read):
        store(pick)
    save(read.watermark); log(sampler.stats)
"""

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
