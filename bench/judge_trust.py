"""Judge trust: how well each judge separates the golden sets' known-good from known-bad answers, and its bias probes.

The offline reference judge always; with --judge also that endpoint, when it answers its health check. Prints the
faithfulness AUROC [95%] over chance (0.5) and over the trust policy's 0.70, the unscored rate and the verdict,
then each bias probe against its limit. `--judge-items N` caps the endpoint's pairs and probe items per set.

    .venv/bin/python bench/judge_trust.py [--judge URL --model NAME] [--dataset SET ...] [--limit N] [--pairwise]
        [--probe-items 40] [--judge-items N]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from judges.factory import REFERENCE
from judgewatch.contract.rubric import load_rubric
from judgewatch.regression.golden import load_golden_set
from judgewatch.settings import get_settings
from judgewatch.storage.trust import TrustEvidence, TrustRecord
from judgewatch.trust.policy import TrustPolicy
from judgewatch.trust.probe_policy import probe_lines
from judgewatch.trust.runs import JudgeUnreachable, judges_under_test, validate

CHANCE = 0.5


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


async def main(args: argparse.Namespace) -> None:
    settings = get_settings()
    policy = TrustPolicy()
    rubrics = [load_rubric("answer_quality", settings.rubrics_dir)]
    if args.pairwise:
        rubrics.append(load_rubric("pairwise_preference", settings.rubrics_dir))
    sets = [load_golden_set(name, datasets_dir=settings.datasets_dir) for name in args.dataset]
    specs = [REFERENCE] + ([args.judge] if args.judge else [])
    print(f"policy: {policy.describe()}")
    print(
        f"{'judge':<32} {'rubric':<20} {'dataset':<18} {'n':>4} {'AUROC [95% CI]':<22} "
        f"{'/chance':>7} {'/0.70':>6} {'unscored':>8} {'consist.':>8}  verdict  (s)"
    )
    probed: list[TrustRecord] = []
    for spec in specs:
        [under_test] = judges_under_test(spec, settings, args.model, args.concurrency)
        limit = args.limit if spec == REFERENCE or args.judge_items is None else args.judge_items
        probe_items = args.probe_items if spec == REFERENCE or args.judge_items is None else args.judge_items
        started = time.perf_counter()
        try:
            report = await validate(
                under_test,
                rubrics,
                sets,
                engine=None,
                policy=policy,
                limit=limit,
                pairwise_limit=limit,
                probe_items=probe_items,
            )
        except JudgeUnreachable as exc:
            print(f"{spec}: {exc}")
            continue
        finally:
            await under_test.aclose()
        elapsed = time.perf_counter() - started
        probed += [r for r in report.records if r.evidence == TrustEvidence.bias_probes]
        for record in report.records:
            if record.evidence == TrustEvidence.bias_probes:
                continue
            fig = record.figures["criteria"].get(policy.criterion, {})
            auroc = fig.get("auroc")
            interval = f"{_fmt(auroc)} [{_fmt(fig.get('low'))}, {_fmt(fig.get('high'))}]"
            verdict = {True: "trusted", False: "REFUSED", None: "inconclusive"}[record.trustworthy]
            print(
                f"{record.judge_kind + ':' + record.judge_name:<32} {record.rubric_name:<20} {record.dataset:<18} "
                f"{record.n_items:>4} {interval:<22} "
                f"{_fmt(auroc / CHANCE if auroc is not None else None, '.2f'):>7} "
                f"{_fmt(auroc / policy.min_auroc if auroc is not None else None, '.2f'):>6} "
                f"{_fmt(fig.get('unscored_rate'), '.0%'):>8} {_fmt(fig.get('position_consistency'), '.0%'):>8}  "
                f"{verdict:<8} {elapsed:.0f}"
            )

    print(f"\n{policy.probes.describe()}")
    for record in probed:
        verdict = {True: "passed", False: "REFUSED", None: "inconclusive"}[record.trustworthy]
        cost = record.figures.get("cost", {})
        print(
            f"{record.judge_kind}:{record.judge_name} on {record.dataset}: {record.n_items} items, "
            f"{cost.get('calls', 0)} calls in {cost.get('wall_s', 0):.0f} s, probes {verdict}"
        )
        for _, passed, line in probe_lines(record.figures, policy.probes):
            print(f"  [{ {True: 'ok', False: 'FAIL', None: '?'}[passed] }] {line}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", help="OpenAI-compatible base URL of a judge to measure besides the reference judge")
    parser.add_argument("--model", default=None, help="served model name (default: the settings' judge_model)")
    parser.add_argument("--dataset", action="append", default=None, help="golden set (repeatable)")
    parser.add_argument("--limit", type=int, default=None, help="first N items of each set")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pairwise", action="store_true", help="also pairwise, both orders (doubles the calls)")
    parser.add_argument("--probe-items", type=int, default=40, help="golden items per set for the bias probes")
    parser.add_argument("--judge-items", type=int, default=None, help="pairs and probe items for the --judge")
    parsed = parser.parse_args()
    parsed.dataset = parsed.dataset or ["halueval_qa_mini", "halluqa_mini"]
    asyncio.run(main(parsed))
