"""`judgewatch regress` as the release pipeline calls it, in its own process, with the real vLLM CPU server.

SmolLM2-135M judges at chance (JUDGE_RUNTIME.md: it scores nearly everything 1), so no release can be made to
regress *through its scores* reliably, and a gate that measures it refuses to rest on it. The cases:
- exit 2 through the real vLLM judge: the gate measures the unmeasured SmolLM2 on the golden sets' known answers
  first (5 pairs per set, with the policy's minimum lowered to 5 so that 20 calls decide), finds it at chance and
  refuses ("judge not trustworthy"); the next gate finds the stored measurement and measures nothing;
- exit 0 through the real vLLM judge only with `--accept-unvalidated-judge`, which the report says first and the
  CLI last: a release with the same recorded answers as its baseline;
- exit 1 with the real vLLM server as a *tier*: its generated answers to HalluQA questions (a 135M model,
  measured far below the known-good answers) graded by the offline reference judge (validated and probed on the
  full mini sets first, as `judgewatch judges validate` does), against a baseline of
  known-good answers (the baseline, first judged by SmolLM2, is judged again by the reference judge: one series);
- exit 2: a tier endpoint down, and the judge endpoint down.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.settings import REPO_ROOT

from .conftest import VLLM_MODEL

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ITEMS_PER_SET = 10  # keeps each gate run to seconds with SmolLM2 on 2 cores


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


def subset(source: str, folder: Path) -> Path:
    """The first ITEMS_PER_SET rows of a shipped golden set, as a golden set folder of its own."""
    rows = (REPO_ROOT / "datasets" / source / "data.jsonl").read_text(encoding="utf-8").splitlines()
    folder.mkdir(parents=True)
    (folder / "data.jsonl").write_text("\n".join(rows[:ITEMS_PER_SET]) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, vllm_url: str) -> Iterator[dict[str, object]]:
    """Two small golden sets, known-good recorded answers, and release r1 stored and accepted as baseline."""
    root = tmp_path_factory.mktemp("gate")
    sets = [subset("halueval_qa_mini", root / "halueval_s"), subset("halluqa_mini", root / "halluqa_s")]
    good = root / "good.jsonl"
    write_recorded_answers(good, [(i.id, i.good_answers[0]) for s in sets for i in load_golden_set(s).items])
    good_zh = root / "good_zh.jsonl"
    write_recorded_answers(good_zh, [(i.id, i.good_answers[0]) for i in load_golden_set(sets[1]).items])
    env = {
        **os.environ,
        "PREFECT_HOME": str(root / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "JUDGEWATCH_DATA_DIR": str(root / "data"),
        "JUDGEWATCH_DATABASE_URL": f"sqlite:///{root / 'jw.db'}",
    }
    work: dict[str, object] = {"root": root, "sets": sets, "good": good, "good_zh": good_zh, "env": env}
    reference = judgewatch(
        work, "judges", "validate", "--judge", "reference", "--dataset", "halueval_qa_mini", "--dataset", "halluqa_mini"
    )
    assert reference.returncode == 0 and "answer_quality 1.1.0: trustworthy" in reference.stdout, reference.stdout
    first = judgewatch(
        work, "regress", "--release", "r1", *datasets(work), *recorded(work), "--judge", vllm_url, ACCEPT
    )
    assert first.returncode == 0, first.stdout + first.stderr
    accepted = judgewatch(work, "baseline", "accept", "--release", "r1", "--by", "ci")
    assert accepted.returncode == 0, accepted.stderr
    yield work


ACCEPT = "--accept-unvalidated-judge"
# The gate measures 5 known-answer pairs per set (20 SmolLM2 calls), and the policy lets 5 decide (default 20):
# a judge at chance, half its replies unusable, fails on that many as surely as on more.
SMALL_POLICY = {"JUDGEWATCH_TRUST_GATE_ITEMS": "5", "JUDGEWATCH_TRUST_MIN_ITEMS": "5"}


def judgewatch(work: dict[str, object], *args: str, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = work["env"]
    assert isinstance(env, dict)
    command = [sys.executable, "-m", "judgewatch", *args]  # the `judgewatch` console script
    return subprocess.run(command, env={**env, **env_extra}, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)


def datasets(work: dict[str, object], only: int | None = None) -> list[str]:
    sets = work["sets"]
    assert isinstance(sets, list)
    chosen = sets if only is None else [sets[only]]
    return [arg for s in chosen for arg in ("--dataset", str(s))]


def recorded(work: dict[str, object]) -> list[str]:
    return ["--answers", f"full={work['good']}", "--answers", f"quantized={work['good']}"]


def report(work: dict[str, object], release: str) -> tuple[str, dict[str, object]]:
    path = Path(str(work["root"])) / "data" / "reports" / f"regression-{release}.md"
    return path.read_text(encoding="utf-8"), json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))


@pytest.mark.timeout(1800)  # three gate runs through a CPU vLLM on a shared machine
def test_the_gate_measures_smollm2_first_refuses_it_and_passes_only_when_accepted(
    work: dict[str, object], vllm_url: str
) -> None:
    args = ("regress", "--release", "r2", *datasets(work), *recorded(work), "--judge", vllm_url)
    refused = judgewatch(work, *args, **SMALL_POLICY)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "COULD NOT EVALUATE (exit 2): judge not trustworthy: judge openai:" in refused.stderr
    assert "judge measured before this gate" in refused.stderr and "known answers on halluqa_s" in refused.stderr
    markdown, data = report(work, "r2")
    assert "NOT TRUSTWORTHY" in markdown and "AUROC" in markdown  # the measured figures, in the report
    gate = data["gate"]
    assert isinstance(gate, dict) and gate["accepted_unvalidated"] is None

    cached = judgewatch(work, *args, **SMALL_POLICY)  # same judge configuration: the stored measurement decides
    assert cached.returncode == 2 and "judge not trustworthy" in cached.stderr
    assert "judge measured before this gate" not in cached.stderr + cached.stdout

    done = judgewatch(work, *args, ACCEPT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS (exit 0)" in done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("WARNING: ACCEPTED ON PURPOSE (--accept-unvalidated-judge): judge openai:"), done.stdout
    markdown, data = report(work, "r2")
    assert markdown.splitlines()[0].startswith("**WARNING: ACCEPTED ON PURPOSE (--accept-unvalidated-judge)")
    assert f"judge: openai:{VLLM_MODEL} at {vllm_url}" in markdown
    tiers = data["tiers"]
    assert isinstance(tiers, list) and [t["evaluation"]["baseline_release"] for t in tiers] == ["r1", "r1"]
    assert all(c["diff"]["n"] > 0 for t in tiers for c in t["evaluation"]["comparisons"])


def test_a_weak_live_tier_regresses_against_known_good_answers(work: dict[str, object], vllm_url: str) -> None:
    """The real vLLM server answers the HalluQA questions as the quantized tier; the reference judge grades."""
    done = judgewatch(
        work,
        "regress",
        "--release", "r3",
        *datasets(work, only=1),
        "--answers", f"full={work['good_zh']}",
        "--tier", f"quantized={vllm_url}#{VLLM_MODEL}",
        "--judge", "reference",
        "--answer-max-tokens", "64",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REGRESSION (exit 1, margin 0.25): tier quantized" in done.stderr
    assert "tier full" not in done.stderr.splitlines()[0]
    _, data = report(work, "r3")
    tiers = data["tiers"]
    assert isinstance(tiers, list)
    quantized = next(t for t in tiers if t["tier"] == "quantized")
    assert quantized["generation"]["generated"] == ITEMS_PER_SET
    assert quantized["source"] == f"live:{vllm_url}#{VLLM_MODEL}"


def test_an_unreachable_tier_endpoint_cannot_be_evaluated(work: dict[str, object]) -> None:
    down = f"http://127.0.0.1:{closed_port()}/v1"
    done = judgewatch(
        work, "regress", "--release", "r4", *datasets(work), "--tier", f"full={down}#m", "--judge", "reference"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"COULD NOT EVALUATE (exit 2): tier full: endpoint unreachable: {down}" in done.stderr


def test_an_unreachable_judge_cannot_be_evaluated(work: dict[str, object]) -> None:
    down = f"http://127.0.0.1:{closed_port()}/v1"
    done = judgewatch(work, "regress", "--release", "r5", *datasets(work), *recorded(work), "--judge", down)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"judge endpoint unreachable: judge at {down}" in done.stderr
