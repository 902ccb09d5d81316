"""PandaLM's human-labeled pairwise test set with two real judges' verdicts, as arrays for calibration checks.

Source: WeOpenML/PandaLM (Apache-2.0), 999 pairs, 3 human annotators each; see the data folder's SOURCE.md.
Verdict codes: 1 = response1 better, 2 = response2 better, 0 = tie, NaN = no verdict (gpt-3.5's "garbage")."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

logger = logging.getLogger(__name__)

TESTSET = "data/testset-v1.json"
GPT35 = "data/gpt-3.5-turbo-testset-v1.json"
PANDALM7B = "data/pandalm-7b-testset-v1.json"

_GPT_CODES = {"1": 1.0, "2": 2.0, "Tie": 0.0, "garbage": np.nan}


@dataclass(frozen=True, slots=True, eq=False)
class PandaLMSet:
    """Aligned by `idx`: the three annotators (items x 3), their majority, and each judge's verdict."""

    idx: NDArray[np.int64]
    annotators: NDArray[np.float64]
    human_majority: NDArray[np.float64]
    judges: dict[str, NDArray[np.float64]]


def majority(labels: NDArray[np.float64]) -> NDArray[np.float64]:
    """Most frequent code per row of (items x annotators); no majority (all differ) counts as a tie (0)."""
    codes = np.array([0.0, 1.0, 2.0])
    votes = (labels[:, :, None] == codes).sum(axis=1)
    winner = codes[votes.argmax(axis=1)]
    return np.where(votes.max(axis=1) * 2 > labels.shape[1], winner, 0.0)


def preference_score(codes: ArrayLike) -> NDArray[np.float64]:
    """Verdict code as a numeric preference for response1: 1 -> 1.0, 2 -> 0.0, tie (0) -> 0.5, NaN stays NaN."""
    c = np.asarray(codes, dtype=np.float64)
    return np.select([c == 1, c == 2, c == 0], [1.0, 0.0, 0.5], default=np.nan)


def _by_idx(rows: list[dict[str, object]], field: str, n: int, decode: dict[str, float] | None) -> NDArray:
    out = np.full(n, np.nan)
    for row in rows:
        value = row[field]
        out[int(str(row["idx"]))] = decode[str(value)] if decode is not None else float(str(value))
    return out


def load_pandalm(folder: Path) -> PandaLMSet:
    """Read the PandaLM test set and the gpt-3.5-turbo and PandaLM-7B verdict files from `folder`."""
    tests = json.loads((folder / TESTSET).read_text(encoding="utf-8"))
    n = len(tests)
    idx = np.array([int(r["idx"]) for r in tests], dtype=np.int64)
    if not np.array_equal(np.sort(idx), np.arange(n)):
        raise ValueError(f"{folder / TESTSET}: idx is not 0..{n - 1}")
    annotators = np.full((n, 3), np.nan)
    for r in tests:
        annotators[r["idx"]] = [r["annotator1"], r["annotator2"], r["annotator3"]]
    gpt = json.loads((folder / GPT35).read_text(encoding="utf-8"))
    panda = json.loads((folder / PANDALM7B).read_text(encoding="utf-8"))
    judges = {
        "gpt-3.5-turbo": _by_idx(gpt, "gpt_result", n, _GPT_CODES),
        "pandalm-7b": _by_idx(panda, "pandalm_result", n, None),
    }
    logger.info("pandalm: %d pairs, judges %s", n, sorted(judges))
    return PandaLMSet(np.arange(n), annotators, majority(annotators), judges)
