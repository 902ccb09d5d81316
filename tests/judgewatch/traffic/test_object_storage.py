"""Sources on object storage: `s3://` globs of JSONL (plain and gzip) and Parquet logs on moto's standalone S3
server on loopback, read through fsspec/s3fs as a real endpoint, sample exactly the picks of the same files on
local disk, in one pass and split over partitions, and resume from the watermark."""

from __future__ import annotations

import gzip
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
import s3fs
from moto.server import ThreadedMotoServer

from judgewatch.testing.gateway_log import write_gateway_logs
from judgewatch.testing.processes import free_port
from judgewatch.traffic import Sampler, SourceConfig, read_source
from judgewatch.traffic.partitions import merge_watermarks, partition_sampler, split_source

BUCKET = "gateway-logs"
SAMPLING = {"salt": "obj", "default_rate": 0.2, "dedup": {"window_rows": 500}}


@pytest.fixture(scope="module")
def s3_logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Local logs, and the same files uploaded to a bucket on a moto server at AWS_ENDPOINT_URL."""
    folder = tmp_path_factory.mktemp("logs")
    write_gateway_logs(folder, shards=3, shard_rows=1500)
    with (folder / "log-0.jsonl").open("rb") as src, gzip.open(folder / "log-9.jsonl.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                                            "AWS_ENDPOINT_URL")}  # fmt: skip
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")  # fmt: skip
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        for path in sorted(folder.iterdir()):
            client.upload_file(str(path), BUCKET, f"prod/2024/{path.name}")
        yield folder
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.stop()


def _picks(config: SourceConfig) -> list[tuple[str, str, float]]:
    sampler = Sampler(config)
    return [(p.row.source_id, p.stratum, p.inclusion_probability) for p in sampler.run(read_source(config))]


@pytest.mark.parametrize("pattern", ["log-*.jsonl", "log-*.parquet", "log-9.jsonl.gz"])
def test_an_s3_source_samples_the_same_picks_as_the_local_files(s3_logs: Path, pattern: str) -> None:
    kind = "parquet" if pattern.endswith("parquet") else "jsonl"
    local = SourceConfig(name="gw", kind=kind, paths=[str(s3_logs / pattern)], sampling=SAMPLING)
    remote = local.model_copy(update={"paths": [f"s3://{BUCKET}/prod/*/{pattern}"]})
    local_picks, remote_picks = _picks(local), _picks(remote)
    assert remote_picks == local_picks and len(local_picks) > 100


def test_partitions_over_s3_objects_pick_what_one_pass_picks(s3_logs: Path) -> None:
    config = SourceConfig(name="gw", kind="jsonl", paths=[f"s3://{BUCKET}/prod/2024/log-*.jsonl"], sampling=SAMPLING)
    one_pass = _picks(config)
    parts = split_source(config, None, 3)
    assert [len(p.config.paths) for p in parts] == [1, 1, 1]
    split: list[tuple[str, str, float]] = []
    marks = []
    for part in parts:
        sampler, read = partition_sampler(part)
        split += [(p.row.source_id, p.stratum, p.inclusion_probability) for p in sampler.run(read)]
        marks.append(read.watermark)
    assert split == one_pass
    merged = merge_watermarks(marks)
    assert sorted(merged.files) == [f"s3://{BUCKET}/prod/2024/log-{k}.jsonl" for k in range(3)]
    assert list(read_source(config, merged)) == []  # nothing after the watermark


def test_a_missing_object_fails_the_read_naming_its_url(s3_logs: Path) -> None:
    """As a missing local file does (judgewatch.traffic.files.SourcePathError): a source that reads nothing is no
    success, and nothing is read before the error."""
    from judgewatch.traffic.files import SourcePathError

    url = f"s3://{BUCKET}/prod/2024/absent.jsonl"
    config = SourceConfig(name="gw", kind="jsonl", paths=[url], sampling=SAMPLING)
    with pytest.raises(SourcePathError, match=f"{url}: no such object"):
        list(read_source(config))
    empty = f"s3://{BUCKET}/nowhere/*.jsonl"
    with pytest.raises(SourcePathError, match="no object matches"):
        list(read_source(SourceConfig(name="gw", kind="jsonl", paths=[empty], sampling=SAMPLING)))
