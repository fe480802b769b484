"""The same questions typed the way people type them: do the offline answers hold?

    MOCK=1 RAG_DENSE=off PYTHONPATH=src python -m benchmarks.typed_carelessly [SET ...]

SET as in `benchmarks.offline_precision` (default: golden and holdout4). Each answerable question
of a set is asked as written and in each way below; per way, the number answered correctly (the
expected fact in the answer), and the number answered wrongly. A way that loses answers is a way
the product reads a question worse than the words in it deserve: a greeting, thanks or a missing
question mark carry no subject. "keywords" (the question's content words alone) loses the question
frame, and with it the kind of answer asked for: it shows what a search-box query gets.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from benchmarks.offline_precision import paths
from rag.answer.pipeline import build_pipeline
from rag.config import load_settings
from rag.evals.datasets import load_golden
from rag.evals.metrics import contains_fact
from rag.evals.runner import corpus_store
from rag.language.lexicon import STOP_WORDS

WAYS: dict[str, Callable[[str], str]] = {
    "as written": lambda q: q,
    "Hi! ...": lambda q: f"Hi! {q}",
    "Ok, thanks. Another question: ...": lambda q: f"Ok, thanks. Another question: {q}",
    "... Thanks in advance.": lambda q: f"{q} Thanks in advance.",
    "lower case, no mark": lambda q: q.lower().rstrip("?. "),
    "capitals": lambda q: q.upper(),
    "runs of spaces": lambda q: "  " + re.sub(" ", "  ", q),
    "... pls?": lambda q: q.rstrip("?") + " pls?",
    "keywords": lambda q: " ".join(w for w in re.findall(r"[\w'-]+", q) if w.lower() not in STOP_WORDS),
}


def measure(name: str) -> dict[str, int]:
    dataset, corpus = paths(name)
    settings = load_settings(anthropic_api_key="", mock=True)
    cases = [c for c in load_golden(dataset) if c.label == "answer"]
    right = dict.fromkeys(WAYS, 0)
    wrong = dict.fromkeys(WAYS, 0)
    with corpus_store(settings, cases, corpus=corpus) as (store, _note):
        pipeline = build_pipeline(settings, store=store)
        for case in cases:
            for way, typed in WAYS.items():
                answer = pipeline.answer(typed(case.question))
                ok = contains_fact(answer.text, case.expect)
                right[way] += not answer.abstained and ok
                wrong[way] += not answer.abstained and not ok
    return {"answerable": len(cases), "right": right, "wrong": wrong}


def main(argv: list[str]) -> int:
    names = [a for a in argv if not a.startswith("--")] or ["golden", "holdout4"]
    print("answered right / wrong, per way of typing the question")
    print(f"{'set':<10} {'answerable':>10}  " + "  ".join(f"{w:>{max(len(w), 7)}}" for w in WAYS))
    for name in names:
        row = measure(name)
        pairs = {w: f"{row['right'][w]}/{row['wrong'][w]}" for w in WAYS}
        cells = "  ".join(f"{pairs[w]:>{max(len(w), 7)}}" for w in WAYS)
        print(f"{name:<10} {row['answerable']:>10}  {cells}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
