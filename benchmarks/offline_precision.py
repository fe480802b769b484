"""Offline precision per labelled set (issue 28): one pipeline run per question, four figures per set.

    MOCK=1 RAG_DENSE=off PYTHONPATH=src python -m benchmarks.offline_precision [--wrong] [SET ...]

SET is a fixture name (golden = fixtures/eval over fixtures/corpus; holdout, holdout2.., devdocs);
none: the development sets of issue 28. Per set: answered correctly (of the answerable), precision
when answered on the answerable questions, precision when answered over all questions (an answer to
an unanswerable or conflict question counts as wrong), and the refused answerable questions whose
labelled passage is among the refusal's closest passages. `--wrong` also prints, per wrong answer,
the question, the answer and what was expected.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rag.answer.pipeline import build_pipeline
from rag.config import load_settings
from rag.evals.datasets import load_golden
from rag.evals.metrics import contains_fact
from rag.evals.runner import corpus_store

DEV_SETS = (
    "golden",
    "holdout",
    "holdout2",
    "holdout3",
    "holdout4",
    "holdout5",
    "devdocs",
    "holdout6",
    "holdout7",
    "holdout8",
    "holdout9",
)


def paths(name: str) -> tuple[Path, Path]:
    if name == "golden":
        return Path("fixtures/eval/golden.jsonl"), Path("fixtures/corpus")
    return Path(f"fixtures/{name}/golden.jsonl"), Path(f"fixtures/{name}/corpus")


def _share(num: int, den: int) -> str:
    return f"{num / den:.3f} ({num:2d}/{den:2d})" if den else "   -         "


def measure(name: str, *, wrong: bool) -> str:
    dataset, corpus = paths(name)
    settings = load_settings(anthropic_api_key="", mock=True)
    cases = load_golden(dataset)
    answerable = correct = answered = answered_ok = refused = shown = 0
    answered_answerable = 0
    lines: list[str] = []
    with corpus_store(settings, cases, corpus=corpus) as (store, _note):
        pipeline = build_pipeline(settings, store=store)
        for case in cases:
            answer = pipeline.answer(case.question)
            is_answer = case.label == "answer"
            right = is_answer and not answer.abstained and contains_fact(answer.text, case.expect)
            answerable += is_answer
            correct += right
            if not answer.abstained:
                answered += 1
                answered_ok += right
                answered_answerable += is_answer
                if not right and wrong:
                    cited = sorted({c.chunk_id for s in answer.sentences for c in s.citations})
                    lines.append(
                        f"  [{name} {case.id} {case.label}/{case.kind}] Q: {case.question}\n"
                        f"      A: {answer.text}\n"
                        f"      cited {cited}; expected {case.expect!r} in {list(case.chunks)}"
                    )
            elif is_answer:
                refused += 1
                shown += any(r.chunk_id in case.chunks for r in answer.closest)
    row = (
        f"{name:<10} {_share(correct, answerable)}  {_share(correct, answered_answerable)}  "
        f"{_share(answered_ok, answered)}  {_share(shown, refused)}"
    )
    return "\n".join([row, *lines])


def main(argv: list[str]) -> int:
    wrong = "--wrong" in argv
    names = [a for a in argv if not a.startswith("--")] or list(DEV_SETS)
    print("set        ans.correctly    prec(answerable)  prec(all answered)  refused shown")
    for name in names:
        print(measure(name, wrong=wrong), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
