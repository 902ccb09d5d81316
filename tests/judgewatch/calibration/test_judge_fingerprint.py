"""The judge fingerprint reads /v1/models, /version and /metrics from a stub vLLM server: a change of the weights'
path, of the dtype the metrics show or of the server version is a new digest, recorded as a change by name."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from sqlalchemy import Engine

from judgewatch.calibration.fingerprint import Fingerprint, fetch_fingerprint, record_fingerprint, serving_facts
from judgewatch.testing.openai_stub import openai_stub

MODEL = "smollm2-135m-instruct"
# vLLM 0.32's cache config gauge (labels cut to those that matter here); 1 GiB of KV cache holds half as many
# tokens in float32 as in bfloat16.
METRICS = """# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{{block_size="128",cache_dtype="auto",engine="0",kv_cache_memory_bytes="1073741824",\
kv_cache_size_tokens="{tokens}",mamba_ssm_cache_dtype="float32",num_gpu_blocks="{blocks}"}} 1.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="smollm2-135m-instruct"}} {running}
"""
BFLOAT16 = {"tokens": 46592, "blocks": 364}
FLOAT32 = {"tokens": 23296, "blocks": 182}


@dataclass
class Served:
    """What the stub server says it serves; a test changes it between two readings."""

    root: str = "/models/SmolLM2-135M-Instruct"
    version: str = "0.32.0"
    kv: dict[str, int] = field(default_factory=lambda: dict(BFLOAT16))
    running: int = 0


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Served]]:
    state = Served()

    async def models(_request: web.Request) -> web.Response:
        entry = {"id": MODEL, "object": "model", "owned_by": "vllm", "root": state.root, "parent": None}
        return web.json_response({"object": "list", "data": [{**entry, "max_model_len": 2048}]})

    async def version(_request: web.Request) -> web.Response:
        return web.json_response({"version": state.version})

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text=METRICS.format(**state.kv, running=state.running), content_type="text/plain")

    async def chat(_request: web.Request) -> web.Response:
        raise web.HTTPNotFound

    async with openai_stub(models, chat, {"/version": version, "/metrics": metrics}) as url:
        yield url, state


async def read(url: str) -> Fingerprint:
    return await asyncio.to_thread(fetch_fingerprint, url, model=MODEL)  # a sync client, the stub on this loop


async def test_the_fingerprint_reads_version_weights_root_and_the_served_dtype(served: tuple[str, Served]) -> None:
    url, _state = served
    fp = await read(url)
    assert (fp.model_id, fp.root, fp.max_model_len) == (MODEL, "/models/SmolLM2-135M-Instruct", 2048)
    assert (fp.server_version, fp.owned_by, fp.parent) == ("0.32.0", "vllm", None)
    assert fp.serving == {
        "cache_config.cache_dtype": "auto",
        "cache_config.mamba_ssm_cache_dtype": "float32",
        "cache_config.kv_bytes_per_token": "23000",  # 2 bytes x 11520 KV elements per token: bfloat16
    }


@pytest.mark.parametrize(
    ("change", "field_name", "before", "after"),
    [
        ({"root": "/models/SmolLM2-135M-Instruct-int4"}, "root", "/models/SmolLM2-135M-Instruct", None),
        ({"version": "0.33.1"}, "server_version", "0.32.0", "0.33.1"),
        ({"kv": FLOAT32}, "serving.cache_config.kv_bytes_per_token", "23000", "46000"),
    ],
)
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_changed_root_version_or_dtype_is_a_new_digest_recorded_as_that_change(
    served: tuple[str, Served],
    engine: Engine,
    change: dict[str, object],
    field_name: str,
    before: str,
    after: str | None,
) -> None:
    url, state = served
    first = record_fingerprint(engine, await read(url))
    assert first.previous_digest is None and not first.changed
    state.running = 7  # traffic is no change of what is served
    again = record_fingerprint(engine, await read(url))
    assert not again.changed and again.current.digest == first.current.digest and again.changes == {}
    for name, value in change.items():
        setattr(state, name, value)
    check = record_fingerprint(engine, await read(url))
    assert check.changed and check.previous_digest == first.current.digest != check.current.digest
    assert list(check.changes) == [field_name]
    assert check.changes[field_name] == (before, after or state.root)
    assert field_name in check.describe_changes()


def test_metrics_without_vllm_info_gauges_or_that_do_not_parse_give_no_serving_facts() -> None:
    assert serving_facts('# TYPE python_info gauge\npython_info{version="3.11.7"} 1.0\n') == {}
    assert serving_facts("this is { not prometheus") == {}
    quantized = 'vllm:model_config_info{dtype="float16",quantization="awq",served_model_name="m"} 1.0\n'
    assert serving_facts(quantized) == {"model_config.dtype": "float16", "model_config.quantization": "awq"}
