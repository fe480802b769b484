"""The sentence of a passage most likely to answer a question, for an offline refusal to highlight.

The offline reader refuses wherever it cannot be sure; the passages it shows may still hold the
answer. Of each, the sentence sharing the most question terms (weighted by how rare each is among
the passage's sentences) is marked "may answer" so the reader of the page finds it at a glance.
"""

from __future__ import annotations

import math

from rag.language.text import sentence_spans, term_set
from rag.reader.question import question_terms


def likely_sentence(question: str, text: str) -> tuple[int, int] | None:
    """(start, end) of the sentence of `text` that shares the most question weight (each question
    term weighs its IDF over the sentences; ties: the earlier one); None when none shares a term."""
    asked = set(question_terms(question))
    spans = sentence_spans(text)
    if not asked or not spans:
        return None
    found = [term_set(text[a:b]) & asked for a, b in spans]
    n = len(spans)
    weight = {t: math.log((n + 1) / (sum(t in f for f in found) + 0.5)) for t in asked}
    best, best_score = None, 0.0
    for span, terms in zip(spans, found, strict=True):
        score = sum(weight[t] for t in terms)
        if score > best_score:
            best, best_score = span, score
    return best
