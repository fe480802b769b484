"""Pure text utilities shared by ingest, retrieval, generation and verification.

Tokens are lowercase alphanumeric runs; "terms" are Snowball-stemmed tokens with
stop words removed. Sentence spans are end-exclusive offsets into the given text.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from functools import lru_cache

import snowballstemmer

# re-exported: parse and quantities read these through rag.language.text
from rag.language.lexicon import ABBREVIATIONS as ABBREVIATIONS
from rag.language.lexicon import MODAL_RE, MONTH_NAMES, PROPOSAL_RE, SAME_STEM
from rag.language.lexicon import STOP_WORDS as STOP_WORDS

# Local estimate: one token per 4 characters. Claude's current (5.x) tokenizer averages
# about 2.5 characters per token, so Claude counts roughly 1.6x what this returns; budgets
# set in these units are therefore about 1.6x larger in Claude tokens.
CHARS_PER_TOKEN = 4.0


_TOKEN_RE = re.compile(r"[0-9a-z]+(?:['’][a-z]+)?", re.IGNORECASE)
_WORD_SPAN_RE = re.compile(r"\S+")
_NON_ALNUM_RE = re.compile(r"[^0-9a-z]+")

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets and citation markers),
# then whitespace. Markers like "[1]" or "[1, 3]" after the stop belong to the sentence before.
_END_RE = re.compile(r"""[.!?]+["'”’)\]]*(?:\s*\[\d+(?:\s*[,–-]\s*\d+)*\])*(?=\s+|$)""")
# A number, its full stop, then the word after it: an ordinal ("31. März", "am 3. oktober") when that
# word is a month name or in lower case, which no sentence starts with.
_ORDINAL_RE = re.compile(r"(?<![\w.,])\d{1,4}\.[ \t\u00a0]+([^\W\d_][\w-]*)")
# Blank lines, list items, headings, doctest prompts, table rows and field-list lines (":Default: 100")
# start a block.
_BLOCK_BREAK_RE = re.compile(
    r"\n[ \t]*\n|\n(?=[ \t]*(?:[-*+•]|\d+[.)]|#{1,6}|>>>)\s)|\n(?=[ \t]*\|)|\n(?=[ \t]*:\w[\w .-]*:(?:\s|$))"
)

# Snowball stemmer objects keep per-call state and are not thread-safe: one per thread
# (the API answers questions in a threadpool).
_stemmers = threading.local()


def is_proposal(sentence: str) -> bool:
    """True when the sentence proposes or plans ("a proposal to raise the fee to $450")."""
    return bool(PROPOSAL_RE.search(sentence))


def is_hypothetical(sentence: str) -> bool:
    """True when the sentence proposes, plans or supposes ("would", "could", "might"): it does not
    state what currently holds."""
    return is_proposal(sentence) or bool(MODAL_RE.search(sentence))


def normalise(text: str) -> str:
    """Lowercase, alphanumerics only, single spaces: the form fingerprints and matching use."""
    return _NON_ALNUM_RE.sub(" ", text.lower()).strip()


def fingerprint(text: str) -> str:
    """A stable hash of the normalised text: equal for texts differing only in case, spacing, punctuation."""
    return hashlib.sha1(normalise(text).encode("utf-8")).hexdigest()


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate (see CHARS_PER_TOKEN for its ratio to Claude's tokenizer)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def tokens(text: str) -> list[str]:
    """Lowercase word tokens, apostrophes kept inside words ("don't"), plus identifier forms.

    A code identifier gives its parts (as plain words) and, after them, its whole form with the
    separators removed, so `SESSION_COOKIE_AGE`, `session_cookie_age` and `SessionCookieAge`
    all give "sessioncookieage" (see `identifier_forms`).
    """
    found = _TOKEN_RE.findall(text)
    if not (_SEPARATOR_HINT_RE.search(text) or _CAMEL_HINT_RE.search(text)):
        return [t.lower().replace("’", "'") for t in found]
    out: list[str] = []
    extras = {m.end(): identifier_forms(m.group()) for m in _IDENT_RE.finditer(text)}
    ends = sorted(extras)
    k = 0
    for match in _TOKEN_RE.finditer(text):
        while k < len(ends) and ends[k] <= match.start():
            out.extend(extras[ends[k]])
            k += 1
        out.append(match.group().lower().replace("’", "'"))
    for end in ends[k:]:
        out.extend(extras[end])
    return out


# Code identifiers: --flags (hyphens inside), dotted.paths, snake_case / UPPER_CASE, CamelCase /
# mixedCase. Plain words, hyphenated prose ("well-known") and abbreviations ("e.g.") are not.
_IDENT_RE = re.compile(
    r"(?<![\w-])--?[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+"
    r"|(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
    r"|(?<![\w.])_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*"
    r"|(?<![\w.])[A-Za-z][a-z0-9]*(?:[A-Z]+[a-z0-9]+)+[A-Z]*\b",
    re.ASCII,
)
# cheap pre-checks (two simple searches are ~3x faster than one alternation): no hit, no identifier
_SEPARATOR_HINT_RE = re.compile(r"[_.-][A-Za-z]")
_CAMEL_HINT_RE = re.compile(r"(?<=[a-z])[A-Z]")
_HUMP_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_MAX_DOTTED = 6


def _parts(name: str) -> list[str]:
    """'from_object' -> ['from', 'object']; 'getHTTPResponse' -> ['get', 'http', 'response']."""
    return [p.lower() for piece in re.split(r"[_-]+", name) for p in _HUMP_RE.findall(piece)]


def identifier_forms(identifier: str) -> list[str]:
    """The extra tokens an identifier adds to its plain word tokens: whole forms, separators removed.

    "SESSION_COOKIE_AGE" -> ["sessioncookieage"]; "CamelCase" -> ["camel", "case"] (its whole form
    is already the plain token "camelcase"); "app.config.from_object" -> ["appconfigfromobject",
    "configfromobject", "fromobject"]: every dotted suffix of two or more parts and every compound
    part, so `Config.from_object` in a document matches `app.config.from_object` in a question.
    "e.g" and "i.e" give nothing.
    """
    name = identifier.lstrip("-")
    components = [c for c in name.split(".") if c]
    if len(components) > 1 and max(len(c) for c in components) < 2:
        return []
    component_parts = [_parts(c) for c in components]
    if len(components) == 1:
        forms = _compound_forms(name, component_parts[0])
    else:
        forms = _dotted_forms(components, component_parts)
    return [f for f in dict.fromkeys(forms) if len(f) > 1]  # each once, in order of first appearance


def _separated(name: str) -> bool:
    """True when the name joins its parts with "_" or "-" (snake or kebab case, not camel case)."""
    return "_" in name or "-" in name


def _compound_forms(name: str, parts: list[str]) -> list[str]:
    """An undotted name's forms: its joined parts if separated, else (camel case) the parts themselves."""
    if len(parts) < 2:
        return []
    if _separated(name):
        return ["".join(parts)]
    return parts


def _dotted_forms(components: list[str], component_parts: list[list[str]]) -> list[str]:
    """A dotted name's forms: each dotted suffix of two or more components, then each compound component."""
    forms = [
        "".join(p for ps in component_parts[i:] for p in ps)
        for i in range(min(len(components), _MAX_DOTTED) - 1)
    ]
    for original, parts in zip(components, component_parts, strict=True):
        if len(parts) > 1:
            forms.append("".join(parts))
            if not _separated(original):
                forms.extend(parts)
    return forms


@lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    stemmed = str(stemmer.stemWord(token))
    return SAME_STEM.get(stemmed, stemmed)


# A capital letter standing alone is a name ("written in R", "C++", "plan B", "Appendix C"), not part
# of an abbreviation ("U.S.", "X-Protocol"), a drive letter ("C:\") or a word; so is a one-letter
# command-line flag ("-C", "-n"), of either case. Other lower-case single letters are variables, list
# marks and pieces of abbreviations, and stay out.
_NAME_LETTER_RE = re.compile(
    r"(?<![\w.'’-])([A-Z])(?![\w'’-]|\.[A-Za-z]|:[\\/])"  # a capital standing alone, no drive letter
    r"|(?<![\w-])-([A-Za-z])(?![\w'’-])"  # a flag
)


def content_words(text: str) -> list[str]:
    """The tokens `terms` keeps, unstemmed, in order: no stop words; no single letters (digits stay)
    except a capital letter standing alone as a name ("R", "C") and a one-letter flag ("-C", "-n")."""
    found = tokens(text)
    names: set[str] = set()
    if any(len(t) == 1 and t not in STOP_WORDS and not t.isdigit() for t in found):
        names = {(m[1] or m[2]).lower() for m in _NAME_LETTER_RE.finditer(text)}  # only where one may be
    return [t for t in found if t not in STOP_WORDS and (len(t) > 1 or t in names) or t.isdigit()]


def word_parts(word: str) -> frozenset[str]:
    """A word's stem and, for a compound, its parts' stems ("part-time" -> part-time, part, time): two
    words sharing one are the same word or share a part ("part-timers" and "part-time")."""
    lower = word.lower()
    pieces = [p for p in re.split(r"[-'’]", lower) if p]
    return frozenset({stem(lower), *(stem(p) for p in pieces if len(pieces) > 1)})


def terms(text: str) -> list[str]:
    """Content terms: stemmed tokens without stop words, in order, duplicates kept."""
    return [stem(t) for t in content_words(text)]


# Cached by text: the same chunks and sentences are scored request after request, and tokenising
# and stemming them is most of the offline pipeline's cost.
@lru_cache(maxsize=50_000)
def term_set(text: str) -> frozenset[str]:
    """The distinct content terms of `text` (see `terms`)."""
    return frozenset(terms(text))


def _is_abbreviation(text: str, dot: int) -> bool:
    """True when the period at `dot` closes a known abbreviation or a single-letter initial."""
    start = dot
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "([\"'":
        start -= 1
    word = text[start:dot].lower()
    if word in ABBREVIATIONS:
        return True
    # single initials ("J. Smith") and dotted acronyms ("U.S.", "e.g")
    return len(word) == 1 and word.isalpha() or bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]?", word))


def _ordinal(text: str, dot: int) -> bool:
    """True when the full stop at `dot` closes an ordinal number: digits before it, and after it a month
    name ("31. März", "1. maj") or a word in lower case ("am 3. oktober", "der 2. stock")."""
    start = dot
    while start > 0 and text[start - 1].isdigit():
        start -= 1
    match = _ORDINAL_RE.match(text, start)
    if match is None or match.start() != start or start == dot:
        return False
    word = match.group(1)
    return word[0].islower() or word.lower().rstrip(".") in MONTH_NAMES


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end), end-exclusive, stripped of surrounding whitespace.

    Never cuts inside "e.g.", "v2.3", "$0.67", "U.S.", decimals or an ordinal date ("31. März");
    blank lines, list items, headings and table rows always start a new sentence.
    """
    spans: list[tuple[int, int]] = []
    for block_start, block_end in _blocks(text):
        start = block_start
        for match in _END_RE.finditer(text, block_start, block_end):
            dot = match.start()
            if (
                text[dot] == "."
                and match.end() == dot + 1
                and (_is_abbreviation(text, dot) or _ordinal(text, dot))
            ):
                continue
            end = match.end()
            if end >= block_end:
                break
            _append_span(text, start, end, spans)
            start = end
        _append_span(text, start, block_end, spans)
    return spans


def _blocks(text: str) -> list[tuple[int, int]]:
    bounds = []
    start = 0
    for match in _BLOCK_BREAK_RE.finditer(text):
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    blocks = []
    for start, end in bounds:
        # a heading line is a sentence of its own
        newline = text.find("\n", start, end)
        if text[start:end].lstrip().startswith("#") and newline != -1:
            blocks.append((start, newline))
            start = newline + 1
        blocks.append((start, end))
    return blocks


def _append_span(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, as `sentence_spans` cuts them."""
    return [text[s:e] for s, e in sentence_spans(text)]


# --- code in text -----------------------------------------------------------------------------------

# reST directives whose body is code or program output, not prose (docutils' and Sphinx's names).
CODE_DIRECTIVES = frozenset(
    """code code-block sourcecode literalinclude parsed-literal doctest testcode testoutput testsetup
    testcleanup highlight console prompt productionlist ipython jinja snippet""".split()
)
_FENCE_LINE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DIRECTIVE_RE = re.compile(r"^\s*\.\.\s+([A-Za-z][\w:+.-]*)::")
# doctest prompts, "$ cmd" and "user@host:~$ cmd" shell prompts ("$ 5" is money, "# Title" a heading)
_SHELL_RE = re.compile(r"^\s*(?:>>>(?:\s|$)|\$\s+[A-Za-z./~_-]|[\w.-]+@[\w.-]+:\S*[$#]\s)")
_TEMPLATE_RE = re.compile(r"\{%.*%\}|\{\{.*\}\}")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def code_spans(text: str) -> list[tuple[int, int]]:
    """End-exclusive ranges of `text` that are code, not prose, in order and disjoint.

    Code is: Markdown fences (``` or ~~~, fence lines included); reST literal blocks (the indented
    block after a line ending in "::"); the directives in CODE_DIRECTIVES with their indented body;
    doctests (">>> " to the next blank line); shell sessions ("$ cmd", "host$ cmd" to the next
    blank line); template lines ("{% ... %}", "{{ ... }}"). Works on a whole document or on one
    chunk's text; a span never starts or ends on whitespace.
    """
    lines = text.split("\n")
    starts = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    spans: list[tuple[int, int]] = []
    for first, last in _code_runs(lines, _code_lines(lines)):
        _append_span(text, starts[first], starts[last] + len(lines[last]), spans)
    return spans


def _code_lines(lines: list[str]) -> list[bool]:
    """Per line, True when it belongs to a code block (see `code_spans`)."""
    flagged = [False] * len(lines)
    i = 0
    while i < len(lines):
        block = _code_block_at(lines, i)
        if block is None:
            i += 1
            continue
        first, last, i = block
        for k in range(first, last + 1):
            flagged[k] = True
    return flagged


def _code_block_at(lines: list[str], i: int) -> tuple[int, int, int] | None:
    """The code block that line i opens: (first line, last line, line to look at next); None for prose.
    The range is empty (last < first) for a literal-block intro with no indented body."""
    line = lines[i]
    fence = _FENCE_LINE_RE.match(line)
    if fence:
        return _fenced_block(lines, i, fence.group(1))
    directive = _DIRECTIVE_RE.match(line)
    literal_intro = not directive and line.rstrip().endswith("::")
    if literal_intro or (directive and directive.group(1).lower() in CODE_DIRECTIVES):
        return _indented_block(lines, i, with_intro=directive is not None)
    if _SHELL_RE.match(line):
        return _shell_block(lines, i)
    if _TEMPLATE_RE.search(line):
        return i, i, i + 1
    return None


def _fenced_block(lines: list[str], i: int, marker: str) -> tuple[int, int, int]:
    """A fence opened at line i by `marker`, through its closing fence (same character, at least as long)
    or the last line."""
    j = i + 1
    while j < len(lines):
        close = _FENCE_LINE_RE.match(lines[j])
        if close and close.group(1)[0] == marker[0] and len(close.group(1)) >= len(marker):
            break
        j += 1
    return i, min(j, len(lines) - 1), j + 1


def _indented_block(lines: list[str], i: int, *, with_intro: bool) -> tuple[int, int, int]:
    """The lines indented deeper than line i after it (blank lines inside kept); a directive line itself
    is code (`with_intro`), a prose line ending in "::" is not."""
    base = _indent(lines[i])
    last = i if with_intro else -1
    for j in range(i + 1, len(lines)):
        if lines[j].strip():
            if _indent(lines[j]) <= base:
                break
            last = j
    first = i if with_intro else i + 1
    return first, last, max(i + 1, last + 1)


def _shell_block(lines: list[str], i: int) -> tuple[int, int, int]:
    """A doctest or shell session from line i to the next blank line."""
    j = i
    while j < len(lines) and lines[j].strip():
        j += 1
    return i, j - 1, j


def _code_runs(lines: list[str], flagged: list[bool]) -> list[tuple[int, int]]:
    """Runs (first line, last line) of flagged lines, joined across blank lines between code lines."""
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        if not flagged[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and (
            flagged[j + 1] or (not lines[j + 1].strip() and _next_flagged(flagged, lines, j + 1))
        ):
            j += 1
        runs.append((i, j))
        i = j + 1
    return runs


def _next_flagged(flagged: list[bool], lines: list[str], i: int) -> bool:
    """True when the blank run starting at line i is followed by a flagged line (code continues)."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i < len(lines) and flagged[i]


def touches_code(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """True when [start, end) overlaps one of the `code_spans` ranges `spans`: a sentence that is,
    or holds, code (context, never an answer sentence)."""
    return any(s < end and start < e for s, e in spans)


def prose_sentence_spans(text: str) -> list[tuple[int, int]]:
    """`sentence_spans(text)` without the sentences that touch code (see `code_spans`)."""
    code = code_spans(text)
    return [(s, e) for s, e in sentence_spans(text) if not touches_code(code, s, e)]


@lru_cache(maxsize=65_536)
def english_frequency(word: str) -> float:
    """How often `word` occurs in general English, per word of running text, in [0, 1).

    From the English list bundled in the `wordfreq` package (no network); 0.0 for a word it
    does not know (names, codes, jargon), so such a word is never discounted as common.
    """
    from wordfreq import word_frequency  # lazy: loading the list takes ~0.15 s

    return float(word_frequency(word, "en"))
