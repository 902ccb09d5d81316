"""The judge fingerprint read from the real vLLM endpoint, and a change of the served weights detected."""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import Engine

from judgewatch.calibration.fingerprint import fetch_fingerprint, record_fingerprint

from .conftest import VLLM_MODEL

pytestmark = pytest.mark.vllm


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_fingerprint_reads_models_and_version_and_flags_new_weights_behind_the_same_name(
    vllm_url: str, engine: Engine
) -> None:
    fp = fetch_fingerprint(vllm_url, model=VLLM_MODEL)
    assert fp.model_id == VLLM_MODEL and fp.max_model_len == 2048
    assert fp.root and fp.server_version and fp.server_version[0].isdigit()
    # the weights' folder (judge_serve.sh serves .judge/models/SmolLM2-135M-Instruct) and vLLM's version
    assert fp.root.endswith("/SmolLM2-135M-Instruct") and fp.owned_by == "vllm"
    # /metrics' cache config: the KV cache's dtype follows the model's, its bytes per token show which
    assert fp.serving["cache_config.cache_dtype"] == "auto"
    assert int(fp.serving["cache_config.kv_bytes_per_token"]) in (23000, 46000)  # bfloat16 or float32
    first = record_fingerprint(engine, fp)
    assert first.previous_digest is None and not first.changed
    again = record_fingerprint(engine, fetch_fingerprint(vllm_url, model=VLLM_MODEL))
    assert again.previous_digest == fp.digest and not again.changed
    # the same model name, other weights (what the configuration hash cannot see)
    swapped = dataclasses.replace(fp, root=f"{fp.root}-int4")
    check = record_fingerprint(engine, swapped)
    assert check.changed and check.previous_digest == fp.digest and swapped.digest != fp.digest
    assert check.changes == {"root": (fp.root, f"{fp.root}-int4")}
