"""The offline extractive reader: `OfflineGenerator`, which implements `rag.answer.generate.Generator`.

A generator receives the question and the numbered blocks and returns sentences
with *unverified* claims; verification happens later, always against the original
chunk text. The generator composes the reader's steps: the question read (`rag.reader.question`), each
block's sentences read and the eligible ones ranked (`rag.reader.candidates`, by the rules of
`rag.reader.answerable`), and the fabrication switch (`rag.reader.fabricate`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from rag.language.text import normalise, word_parts
from rag.language.tools import Tools, installed
from rag.reader.answerable import MIN_COVERAGE, Reading, shared_across_subjects
from rag.reader.candidates import (
    Candidate,
    by_meaning,
    collect,
    leads,
    meanings_tie,
    rank_key,
    readings,
    related,
    unsure,
)
from rag.reader.fabricate import fabrication
from rag.reader.question import EPS, Ask, foreign_names, read_question, unwritten, variants
from rag.types import Block, Claim, Draft, Fabrication, Generation, Piece, Turn

MAX_SENTENCES = 3
# A further sentence must add a question term, or cover at least this share of what the best one covers.
EXTRA_RATIO = 0.8
_FEEDBACK_PREFIX = 60
_END_PUNCT = ".!?"
_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:[-'’][A-Za-z0-9]+)*")


def cite(sentence: str, ns: Sequence[int]) -> str:
    """The sentence with its `[n]` markers before the final period (after other end punctuation)."""
    marker = "".join(f"[{n}]" for n in ns)
    if sentence.endswith("."):
        return f"{sentence[:-1]} {marker}."
    if sentence and sentence[-1] in _END_PUNCT:
        return f"{sentence} {marker}"
    return f"{sentence} {marker}."


class OfflineGenerator:
    """Deterministic extractive generator following the inline `[n]` contract.

    It copies up to `max_sentences` prose sentences of the blocks (never code, doctests, shell or
    template lines, markup, headings, pointers elsewhere or text addressing an assistant) that
    answer the question, each cited to every block that contains it. A sentence answers when
    - with its block's title and section it covers `min_coverage` of the question's IDF mass;
    - it is bound to the asked subject: with its own label (the heading or term above it), its
      field entry and, for typed or pronoun-led sentences, its neighbours, it covers MIN_BINDING
      of the topic mass, names every identifier the question names and no other identifier, and
      names no other subject (a name absent from its block while the question's name is absent);
    - it carries the asked kind of answer: a figure, date or clock time for amount, duration and
      date questions, a stated default for default questions (REQUIRED), a price for price questions,
      a new name in code called the asked kind of thing for "which option / variable ..." questions.
    The coverage and binding shares are also tried on two other weightings, and either suffices:
    the words of a situation stated before the asking sentence (or a condition leading it) at
    SCENARIO_WEIGHT, whose identifiers then need not be named; and, for a sentence carrying the
    asked kind (never for a yes/no question), the everyday English words no block contains at zero.
    A question word no block writes is covered, at ALIGN_WEIGHT, by a word one WordNet link away.
    Candidates rank by coverage, the asked type, word order and block score. It writes nothing when
    no sentence qualifies, so the grounding gate refuses. `fabricate` adds one bad sentence to first
    drafts, for demonstrations and verifier tests: "nonexistent" cites number n_max + 1, "unrelated"
    cites a real block that does not support the sentence. With `feedback`, the sentences it names
    and the fabrication are left out.
    """

    name = "offline-extractive"
    native_citations = False

    def __init__(
        self,
        fabricate: Fabrication = "",
        *,
        min_coverage: float = MIN_COVERAGE,
        max_sentences: int = MAX_SENTENCES,
        meaning: bool = False,
        tools: Tools | None = None,
    ) -> None:
        self.fabricate: Fabrication = fabricate
        self.min_coverage = min_coverage
        self.max_sentences = max_sentences
        # the meaning pass and the relatedness veto (`candidates.by_meaning`, `candidates.related`; the
        # local sentence encoder): off unless asked for, see `Settings.offline_meaning`
        self.meaning = meaning
        # WordNet (the paraphrase alignment) and the encoder (the meaning pass); None: the installed ones
        self.tools = tools if tools is not None else installed()

    def generate(
        self,
        question: str,
        blocks: Sequence[Block],
        *,
        feedback: Sequence[str] = (),
        max_tokens: int | None = None,
        history: Sequence[Turn] = (),
        focus: Sequence[str] = (),
    ) -> Generation:
        """The extractive answer as drafts plus the inline text (`sentence [n].` joined by spaces); it has
        no output budget (`max_tokens` is ignored), and reads a follow-up as its standalone question
        (`history` is ignored). `focus`: words a follow-up adds to its conversation ("and for
        enterprise customers?"); a sentence answers only when it, or its block's title or section,
        says each of them (a word sharing a stem or a compound part), since the standalone question
        holds the earlier question's words too and a sentence about those alone answers the earlier
        question, not this one."""
        drafts = self.drafts(question, blocks, feedback=feedback, focus=focus)
        text = " ".join(cite(d.text, [c.n for c in d.claims]) for d in drafts)
        return Generation(drafts=drafts, text=text)

    async def stream(
        self,
        question: str,
        blocks: Sequence[Block],
        *,
        history: Sequence[Turn] = (),
        focus: Sequence[str] = (),
    ) -> AsyncIterator[Piece]:
        """The same answer as `generate`, in 2-3 pieces per sentence with a yield to the loop between."""
        for i, draft in enumerate(self.drafts(question, blocks, focus=focus)):
            written = cite(draft.text, [c.n for c in draft.claims]) + " "
            for piece in _split(written, parts=2 + i % 2):
                await asyncio.sleep(0)
                yield Piece(text=piece)

    def drafts(
        self,
        question: str,
        blocks: Sequence[Block],
        *,
        feedback: Sequence[str] = (),
        focus: Sequence[str] = (),
    ) -> tuple[Draft, ...]:
        """The answer's sentences with their claims, before any marker is written (`focus` as for
        `generate`)."""
        chosen = self._choose(question, blocks, focus)
        said = normalise(" ".join(feedback))
        if said:
            # Feedback quotes sentences, possibly shortened: a matching prefix names the sentence.
            chosen = [c for c in chosen if c.key[:_FEEDBACK_PREFIX] not in said]
        out = [Draft(text=c.text, claims=tuple(Claim(n=n) for n in c.ns)) for c in chosen]
        if self.fabricate and not feedback:
            fake = fabrication(self.fabricate, blocks, {c.key for c in chosen})
            if fake is not None:
                out.append(fake)
        return tuple(out)

    def _candidates(self, question: str, blocks: Sequence[Block]) -> list[Candidate]:
        """Every distinct block sentence that answers the question (see the class doc), scored. When
        no sentence answers on words, the sentences closest to the question in meaning are tried
        again with the question words they do not write counted as paraphrased (see `by_meaning`)."""
        ask = read_question(question, blocks, self.tools.wordnet)
        if ask is None:
            return []
        open_labels = leads(blocks)
        weighings = variants(ask)
        read = [(block, r) for block in blocks for r in readings(ask, block, open_labels.get(block.n, ""))]
        found = collect(ask, [(b, r, 0.0) for b, r in read], weighings, self.min_coverage)
        if self.meaning:
            found = self._by_meaning_too(ask, read, blocks, related(self.tools.meaning, ask, found))
        return [c for c in found.values() if not shared_across_subjects(ask, c.key, blocks, open_labels)]

    def _by_meaning_too(
        self,
        ask: Ask,
        read: Sequence[tuple[Block, Reading]],
        blocks: Sequence[Block],
        found: dict[str, Candidate],
    ) -> dict[str, Candidate]:
        """`found` when it holds a candidate; else the readings that answer by meaning (`by_meaning`),
        none when two of them are equally close (`meanings_tie`)."""
        if found or not read:
            return found
        unwritten_terms = unwritten(ask.weights.keys(), blocks)
        if foreign_names(self.tools.wordnet, ask.question, unwritten_terms - ask.typed):
            return found
        # the words no block writes are the asker's own: the subject is what the blocks do write
        meant = replace(ask, aligned={**{t: frozenset() for t in unwritten_terms}, **ask.aligned})
        meaning = self.tools.meaning
        found = collect(meant, by_meaning(meaning, meant, read), variants(meant), self.min_coverage)
        return {} if meanings_tie(meaning, ask.question, found) else found

    def ranked(self, question: str, blocks: Sequence[Block]) -> list[Candidate]:
        """Every eligible sentence, best first: what `_choose` picks from, and what the answer gate
        (`rag.reader.gate`) reads the choice's margins from."""
        eligible = self._candidates(question, blocks)
        eligible.sort(key=rank_key)
        return eligible

    def _choose(self, question: str, blocks: Sequence[Block], focus: Sequence[str] = ()) -> list[Candidate]:
        eligible = self.ranked(question, blocks)
        if focus:
            eligible = [c for c in eligible if says_all(focus, c, blocks)]
        if unsure(eligible) or (eligible and eligible[0].unbound):
            # two passages answer equally well, or the best leaves a subject word of the question
            # unsaid: neither is certain to be the answer
            return []
        chosen: list[Candidate] = []
        covered_so_far: set[str] = set()
        for c in eligible:
            if len(chosen) >= self.max_sentences:
                break
            if chosen and not self._worth_adding(c, chosen[0], covered_so_far):
                continue
            chosen.append(c)
            covered_so_far |= c.own
        return chosen

    def _worth_adding(self, c: Candidate, best: Candidate, covered: set[str]) -> bool:
        """A further sentence covers enough on its own (no title/section help), comes from the best
        sentence's block, and adds a question term or nearly matches the best."""
        if c.own_coverage < self.min_coverage - EPS:
            return False
        if not set(c.ns) & set(best.ns):
            return False
        return bool(c.own - covered) or c.own_coverage >= EXTRA_RATIO * best.own_coverage


def _split(text: str, *, parts: int) -> list[str]:
    """`text` cut at spaces into at most `parts` pieces that join back to it exactly."""
    if parts <= 1:
        return [text]
    cuts: list[int] = []
    for k in range(1, parts):
        at = text.find(" ", len(text) * k // parts)
        if at > 0 and (not cuts or at > cuts[-1]):
            cuts.append(at)
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def says_all(words: Sequence[str], candidate: Candidate, blocks: Sequence[Block]) -> bool:
    """The candidate sentence, or the title or section of a block that writes it, says every one of
    `words`: a word sharing a stem or a compound part ("part-timers" is said by "part-time")."""
    labels = [f"{b.chunk.title} {b.chunk.section}" for b in blocks if b.n in candidate.ns]
    said: set[str] = set()
    for text in (candidate.text, *labels):
        for token in _TOKEN_RE.findall(text):
            said |= word_parts(token)
    return all(word_parts(word) & said for word in words)
