"""Domain types: pure, frozen values shared by every stage of the request path.

Nothing here does I/O or knows about pydantic. Offsets are always end-exclusive
character offsets; block numbers (`n`) are 1-based and exist only for one request.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import date
from typing import Literal

# The three refusal lines, and the two ways a model's reply can end before it shows anything:
# cut short (max_tokens, pause_turn, a stream that stopped) or declined (stop_reason "refusal").
RefusalReason = Literal[
    "", "low_retrieval_score", "conflicting_sources", "no_citations", "reply_cut", "reply_declined"
]
ConflictPolicy = Literal["present_both", "prefer_newest"]
DoneStatus = Literal["answered", "abstained", "error"]
# How a shown sentence begins in the answer's layout: running on, a new paragraph, or a list item.
# Where a sentence starts in the layout: running on, a new paragraph, a bullet item, a numbered item
# (`number`), or a table row (`header` above the rule, `row` below it; `cells` hold its cells).
SentenceStart = Literal["", "paragraph", "item", "numbered", "header", "row"]
# Stop reasons of a model reply that leave the sentence in progress unfinished.
CUT_STOP_REASONS = frozenset(
    {"max_tokens", "refusal", "pause_turn", "model_context_window_exceeded", "incomplete"}
)
# Our own stop reason for a reply that ended before `message_stop`: the provider failed or the stream
# stopped short after some content (what came before it is judged; the sentence in progress is not).
INCOMPLETE = "incomplete"
Fabrication = Literal["", "nonexistent", "unrelated"]
# A reader's verdict on one answer (the page's "helpful / wrong" buttons).
FeedbackVerdict = Literal["helpful", "wrong"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """One source file as stored: provenance plus the full normalised text chunks point into."""

    doc_id: str
    title: str
    text: str
    source_path: str = ""
    url: str = ""
    updated_at: date | None = None
    content_hash: str = ""
    # The groups that may read it (rag.access), sorted; () means everyone.
    access: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    """A retrievable span of a document. `text` is the original, never rewritten.

    `start_char`/`end_char` are end-exclusive offsets into the document text, so
    `document.text[start_char:end_char] == text`.
    """

    chunk_id: str
    doc_id: str
    title: str
    section: str
    text: str
    updated_at: date | None = None
    url: str = ""
    page: int | None = None
    start_char: int = 0
    end_char: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Scored:
    """A chunk with its relevance in [0, 1]: the reranker's score, which the retrieval gate reads.

    `scorer` names the reranker that gave `score` (a failed Voyage call leaves the lexical scores),
    so the gate compares it with that reranker's threshold; `lexical` keeps the raw BM25 score.
    """

    chunk: Chunk
    score: float
    lexical: float = 0.0
    scorer: str = ""
    dense: float = 0.0  # cosine similarity to the question when dense retrieval found it, else 0
    words: float = 0.0  # under a hybrid score: the lexical reranker's score alone, else 0

    def rescored(self, score: float, scorer: str, words: float | None = None) -> Scored:
        """This candidate with a reranker's `score` and `scorer` (`dataclasses.replace` without its
        per-call field introspection, which a reranker would pay once per candidate); `words` kept
        unless given."""
        return scored(
            self.chunk, score, self.lexical, scorer, self.dense, self.words if words is None else words
        )


# The slots of Scored, written directly: a frozen dataclass's __init__ goes through
# object.__setattr__ once per field, about twice the cost, and retrieval makes two Scored values per
# candidate per question (issue 29).
_SCORED_SETTERS = tuple(Scored.__dict__[f.name].__set__ for f in fields(Scored))
_new = object.__new__


def scored(
    chunk: Chunk,
    score: float,
    lexical: float = 0.0,
    scorer: str = "",
    dense: float = 0.0,
    words: float = 0.0,
) -> Scored:
    """`Scored(chunk=..., score=..., ...)`, the same frozen value, made about twice as fast (the hot
    path of retrieval and reranking); the arguments in the order of Scored's fields."""
    out: Scored = _new(Scored)
    set_chunk, set_score, set_lexical, set_scorer, set_dense, set_words = _SCORED_SETTERS
    set_chunk(out, chunk)
    set_score(out, score)
    set_lexical(out, lexical)
    set_scorer(out, scorer)
    set_dense(out, dense)
    set_words(out, words)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A chunk as issued to the model for one request, under its 1-based number `n`.

    `sent_text` is what went into the prompt (possibly compressed); verification never reads it.
    """

    n: int
    chunk: Chunk
    score: float
    sent_text: str

    @property
    def header(self) -> str:
        """Provenance header: `[n] title > section (updated YYYY-MM-DD)`, the date left out when unknown."""
        title, section = self.chunk.title, self.chunk.section
        where = title
        if section and section != title:
            where = section if section.startswith(f"{title} > ") else f"{title} > {section}"
        when = f" (updated {self.chunk.updated_at.isoformat()})" if self.chunk.updated_at else ""
        return f"[{self.n}] {where}{when}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """An unverified citation as the generator wrote it: a block number, and a span if any.

    `start`/`end` (native contract: the API's `start_char_index`/`end_char_index`) are end-exclusive
    offsets of `cited_text` in the text SENT for block n (`Block.sent_text`), when the provider gives them.
    """

    n: int
    cited_text: str | None = None
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    """One sentence of generator output, markers stripped, with the citations it claims."""

    text: str
    claims: tuple[Claim, ...] = ()
    starts: SentenceStart = ""
    number: int = 0  # a numbered item's number
    cells: tuple[Draft, ...] = ()  # a table row's cells, each with its own claims


@dataclass(frozen=True, slots=True, kw_only=True)
class Citation:
    """A verified citation. `cited_text == chunk.text[start:end]` of the ORIGINAL chunk."""

    n: int
    chunk_id: str
    title: str
    url: str
    cited_text: str
    start: int
    end: int
    page: int | None = None  # the chunk's 1-based page in a paged source (PDF), else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Sentence:
    """A verified sentence as shown: its text, its verified citations, where it starts in the layout,
    and the reason for each citation of it that failed (`withheld`: reported, never silently removed)."""

    text: str
    citations: tuple[Citation, ...]
    starts: SentenceStart = ""
    withheld: tuple[str, ...] = ()
    number: int = 0  # a numbered item's number
    cells: tuple[str, ...] = ()  # a table row's cells as shown ("" for one withheld)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dropped:
    """A sentence withheld from the user, with one specific, human-readable reason per failed citation."""

    text: str
    detail: tuple[str, ...]


# Why the verifier withheld a citation or a sentence.
IssueKind = Literal[
    "no_citation",  # the sentence claims no citation at all
    "nothing_to_verify",  # no content term to check ("Yes.")
    "nonexistent_block",  # a number that was not issued for this request
    "span_not_in_source",  # the quoted span is not in the original chunk
    "low_overlap",  # too few of the sentence's terms in its evidence
    "other_subject",  # a name, a scope word or a source the evidence lacks
    "contradiction",  # the evidence says the opposite (negation, opposites, swapped values)
    "figures",  # a figure the evidence does not state
    "addressed_text",  # supported only by text addressed to an assistant
    "judged_unsupported",  # undecided by the rules, judged unsupported by the small-model judge
]


class Issue(str):
    """One verifier finding: the human-readable reason (the string itself) and its typed `kind`."""

    kind: IssueKind

    def __new__(cls, kind: IssueKind, text: str) -> Issue:
        issue = super().__new__(cls, text)
        issue.kind = kind
        return issue


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The verifier's judgement of one draft sentence. `pending`: withheld only for low overlap while
    nothing contradicts it (`rag.support.decision.Decision.undecided`), the citations a judge may still
    grant it (`rag.support.judge`); empty for every verdict the rules decided."""

    draft: Draft
    citations: tuple[Citation, ...]
    issues: tuple[Issue, ...]
    pending: tuple[Citation, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.citations)


@dataclass(frozen=True, slots=True, kw_only=True)
class MayAnswer:
    """The sentence of a closest passage most likely to answer the question, as offsets into the
    chunk's text (end-exclusive): shown highlighted on an offline refusal, never as an answer."""

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkRef:
    """A pointer to a chunk for refusals ("closest matches") and logs; `may_answer` on an offline
    refusal's closest passages."""

    chunk_id: str
    title: str
    section: str = ""
    url: str = ""
    score: float = 0.0
    updated_at: date | None = None
    may_answer: MayAnswer | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """One side of a conflict: the sentence that states the quantity, where it came from and when."""

    n: int
    chunk_id: str
    doc_id: str
    title: str
    url: str
    updated_at: date | None
    text: str
    quantity: str
    value: float
    unit: str
    start: int
    end: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflict:
    """Two documents that give different values for the same quantity in the asked context."""

    dimension: str
    context: tuple[str, ...]
    statements: tuple[Statement, ...]
    policy: ConflictPolicy = "present_both"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Model usage summed over calls: tokens, SDK retries, responses received (`calls`), and the
    estimated cost in USD from the configured price table (0 for a model without a price)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    retries: int = 0
    calls: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            retries=self.retries + other.retries,
            calls=self.calls + other.calls,
            cost_usd=self.cost_usd + other.cost_usd,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    """What a generator returns for one call.

    `pieces` is the output as the answer core reads it (native text blocks with their claims);
    when empty, `text` (inline `[n]` contract) is the whole output. `drafts` is the generator's
    own sentence view, for its tests and for calibration; the answer core never reads it.
    """

    drafts: tuple[Draft, ...]
    text: str = ""
    pieces: tuple[Piece, ...] = ()
    usage: Usage = field(default_factory=Usage)
    refused: bool = False
    stop_reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """A verified answer or a refusal: the answer core's events folded (`rag.answer.core.fold`).

    `issued`: the blocks went to the generator (a `meta` event); `status`: how the run ended (the
    `done` event's status), None when it never got there (a stream the client left); `error`: the
    type of the provider error that cut it short ("" when none)."""

    question: str
    text: str = ""
    sentences: tuple[Sentence, ...] = ()
    citations: tuple[Citation, ...] = ()
    abstained: bool = False
    reason: RefusalReason = ""
    message: str = ""
    conflict: Conflict | None = None
    closest: tuple[ChunkRef, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    blocks: tuple[Block, ...] = ()
    usage: Usage = field(default_factory=Usage)
    timings: dict[str, float] = field(default_factory=dict)
    trace_id: str = ""
    cut: bool = False
    reranker: str = ""
    min_score: float = 0.0
    issued: bool = False
    status: DoneStatus | None = None
    error: str = ""
    searched_for: str = ""  # what retrieval searched for: the question, or a follow-up's standalone form


@dataclass(frozen=True, slots=True)
class Turn:
    """An earlier turn of a conversation, as the client sends it back: its question and the answer it
    was shown. Never evidence: only this turn's retrieved blocks are cited."""

    question: str
    answer: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Piece:
    """A streamed fragment of generator output.

    `text` is a delta appended to content block `index`; `claims` are citations that
    arrived for that content block (native contract) and attach to its whole character
    range. Inline-contract generators send markers inside `text` and no claims.
    """

    text: str = ""
    index: int = 0
    claims: tuple[Claim, ...] = ()
    usage: Usage | None = None
    stop_reason: str = ""
    opened: bool = False  # the model call is open (its response began); carries nothing else


@dataclass(frozen=True, slots=True, kw_only=True)
class Gap:
    """A coverage-gap queue entry: a question the knowledge base could not answer."""

    question: str
    top_score: float
    closest: tuple[str, ...]
    asked_at: str
    count: int = 1
    principal: str = ""  # who asked it last


@dataclass(frozen=True, slots=True, kw_only=True)
class AskRecord:
    """One ask-log row: everything needed to resolve "cited [3]" later."""

    trace_id: str
    question: str
    reason: RefusalReason
    abstained: bool
    blocks: tuple[tuple[int, str], ...]
    answer_text: str
    citations: tuple[Citation, ...]
    verdicts: tuple[str, ...]
    top_score: float
    usage: Usage
    timings: dict[str, float] = field(default_factory=dict)
    principal: str = ""  # who asked (rag.access.Principal.name)
    # What retrieval saw: (chunk_id, reranker score) best first, the reranker that scored and the
    # retrieval gate's threshold (for the content owners' per-trace view).
    retrieved: tuple[tuple[str, float], ...] = ()
    reranker: str = ""
    threshold: float = 0.0
    conversation_id: str = ""  # the client's id of the conversation ("" for a single question)
    turn: int = 0  # 1-based turn number within it (0 for a single question)


@dataclass(frozen=True, slots=True, kw_only=True)
class Feedback:
    """A reader's verdict on one answer, tied to the answer's trace id (`id` and `created_at` are
    set by the store: 0 and "" before it is stored)."""

    trace_id: str
    verdict: FeedbackVerdict
    note: str = ""
    question: str = ""
    principal: str = ""  # who gave it (rag.access.Principal.name; "" when keys are off)
    id: int = 0
    created_at: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Heading:
    """One section of one document as indexed: its title, its section path and how many chunks it has."""

    doc_id: str
    title: str
    section: str
    chunks: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreStats:
    documents: int
    chunks: int
    embeddings: int = 0
    backend: str = "sqlite"
