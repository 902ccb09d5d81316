"""Sources on object storage: `s3://`, `gs://` and `az://` globs of JSONL (plain and gzip) and Parquet logs, read
through fsspec with each store's real client library (s3fs, gcsfs, adlfs) from a server on loopback (moto's S3,
gcp-storage-emulator, Azurite from npm), sample exactly the picks of the same files on local disk, in one pass and
split over partitions, and resume from the watermark. The files are uploaded with each vendor's own SDK (boto3,
google-cloud-storage, azure-storage-blob). The gs and az servers take seconds to start: those runs are `slow`.
"""

from __future__ import annotations

import gzip
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from judgewatch.testing.gateway_log import write_gateway_logs
from judgewatch.testing.object_stores import azurite, gcs_emulator
from judgewatch.testing.processes import free_port
from judgewatch.traffic import Sampler, SourceConfig, read_source
from judgewatch.traffic.partitions import merge_watermarks, partition_sampler, split_source

# gcsfs's default filesystem asks the storage control API (gRPC) for each bucket's layout, which no emulator serves
# (every ask waits out a 60 s timeout): the JSON API filesystem, gcsfs's documented switch, set before gcsfs loads.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

BUCKET = "gateway-logs"
SAMPLING = {"salt": "obj", "default_rate": 0.2, "dedup": {"window_rows": 500}}


@dataclass(frozen=True)
class Logs:
    folder: Path  # the logs on local disk
    url: str  # the same files on the store: <scheme>://gateway-logs/prod/2024


@contextmanager
def s3(folder: Path, _workspace: Path) -> Iterator[None]:
    import boto3
    import s3fs
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        }.items():
            mp.setenv(key, value)  # fmt: skip
        s3fs.S3FileSystem.clear_instance_cache()
        try:
            client = boto3.client("s3")
            client.create_bucket(Bucket=BUCKET)
            for path in sorted(folder.iterdir()):
                client.upload_file(str(path), BUCKET, f"prod/2024/{path.name}")
            yield
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
            server.stop()


@contextmanager
def gs(folder: Path, _workspace: Path) -> Iterator[None]:
    import fsspec.config
    import gcsfs
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    from judgewatch.traffic.object_store import filesystem

    with gcs_emulator(BUCKET) as endpoint, pytest.MonkeyPatch.context() as mp:
        mp.setenv("STORAGE_EMULATOR_HOST", endpoint)
        mp.setitem(fsspec.config.conf, "gcs", {"token": "anon"})  # as FSSPEC_GCS_TOKEN=anon or ~/.config/fsspec
        gcsfs.GCSFileSystem.clear_instance_cache()
        if type(filesystem(f"gs://{BUCKET}/x")[0]) is not gcsfs.core.GCSFileSystem:
            pytest.fail("gcsfs loaded before GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false: its gRPC layout asks time out")
        client = storage.Client(project="test", credentials=AnonymousCredentials(), client_options={
            "api_endpoint": endpoint})  # fmt: skip
        bucket = client.bucket(BUCKET)
        for path in sorted(folder.iterdir()):
            bucket.blob(f"prod/2024/{path.name}").upload_from_filename(str(path))
        try:
            yield
        finally:
            gcsfs.GCSFileSystem.clear_instance_cache()


@contextmanager
def az(folder: Path, workspace: Path) -> Iterator[None]:
    import adlfs
    from azure.storage.blob import BlobServiceClient

    with azurite(workspace) as connection, pytest.MonkeyPatch.context() as mp:
        mp.setenv("AZURE_STORAGE_CONNECTION_STRING", connection)  # what adlfs reads, as users set it
        adlfs.AzureBlobFileSystem.clear_instance_cache()
        container = BlobServiceClient.from_connection_string(connection).create_container(BUCKET)
        for path in sorted(folder.iterdir()):
            with path.open("rb") as data:
                container.upload_blob(f"prod/2024/{path.name}", data)
        try:
            yield
        finally:
            adlfs.AzureBlobFileSystem.clear_instance_cache()


STORES: dict[str, Callable[[Path, Path], AbstractContextManager[None]]] = {"s3": s3, "gs": gs, "az": az}


@pytest.fixture(scope="module")
def local_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("logs")
    write_gateway_logs(folder, shards=3, shard_rows=1500)
    with (folder / "log-0.jsonl").open("rb") as src, gzip.open(folder / "log-9.jsonl.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return folder


@pytest.fixture(scope="module", params=["s3", pytest.param("gs", marks=pytest.mark.slow),
                                        pytest.param("az", marks=pytest.mark.slow)])  # fmt: skip
def logs(request: pytest.FixtureRequest, local_logs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Logs]:
    """The local logs, and the same files uploaded to a bucket (container) of the store on loopback."""
    with STORES[request.param](local_logs, tmp_path_factory.mktemp(request.param)):
        yield Logs(local_logs, f"{request.param}://{BUCKET}/prod/2024")


def _picks(config: SourceConfig) -> list[tuple[str, str, float]]:
    sampler = Sampler(config)
    return [(p.row.source_id, p.stratum, p.inclusion_probability) for p in sampler.run(read_source(config))]


@pytest.mark.parametrize("pattern", ["log-*.jsonl", "log-*.parquet", "log-9.jsonl.gz"])
def test_an_object_store_source_samples_the_same_picks_as_the_local_files(logs: Logs, pattern: str) -> None:
    kind = "parquet" if pattern.endswith("parquet") else "jsonl"
    local = SourceConfig(name="gw", kind=kind, paths=[str(logs.folder / pattern)], sampling=SAMPLING)
    remote = local.model_copy(update={"paths": [f"{logs.url.replace('/2024', '/*')}/{pattern}"]})
    local_picks, remote_picks = _picks(local), _picks(remote)
    assert remote_picks == local_picks and len(local_picks) > 100


def test_partitions_over_objects_pick_what_one_pass_picks(logs: Logs) -> None:
    config = SourceConfig(name="gw", kind="jsonl", paths=[f"{logs.url}/log-*.jsonl"], sampling=SAMPLING)
    one_pass = _picks(config)
    parts = split_source(config, None, 3)
    assert [len(p.paths or []) for p in parts] == [1, 1, 1]
    split: list[tuple[str, str, float]] = []
    marks = []
    for part in parts:
        sampler, read = partition_sampler(config, part)
        split += [(p.row.source_id, p.stratum, p.inclusion_probability) for p in sampler.run(read)]
        marks.append(read.watermark)
    assert split == one_pass
    merged = merge_watermarks(marks)
    assert sorted(merged.files) == [f"{logs.url}/log-{k}.jsonl" for k in range(3)]
    assert list(read_source(config, merged)) == []  # nothing after the watermark


def test_a_missing_object_fails_the_read_naming_its_url(logs: Logs) -> None:
    """As a missing local file does (judgewatch.traffic.files.SourcePathError): a source that reads nothing is no
    success, and nothing is read before the error."""
    from judgewatch.traffic.files import SourcePathError

    url = f"{logs.url}/absent.jsonl"
    config = SourceConfig(name="gw", kind="jsonl", paths=[url], sampling=SAMPLING)
    with pytest.raises(SourcePathError, match=f"{url}: no such object"):
        list(read_source(config))
    empty = f"{logs.url.rsplit('/', 2)[0]}/nowhere/*.jsonl"
    with pytest.raises(SourcePathError, match="no object matches"):
        list(read_source(SourceConfig(name="gw", kind="jsonl", paths=[empty], sampling=SAMPLING)))


def test_without_npm_the_az_tests_fail_under_ci_and_skip_elsewhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from judgewatch.testing import object_stores

    monkeypatch.setattr(object_stores, "NPM_PREFIX", tmp_path / "npm")  # Azurite not installed yet
    monkeypatch.setattr("shutil.which", lambda _name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="npm is not installed"):
        object_stores.azurite_blob()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        object_stores.azurite_blob()
