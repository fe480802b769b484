"""Chunk-id versions: an id never names other text than it named when it was issued.

The chunker names chunks by position (`doc#c03`). When an edit changes the text at a position,
the store keeps the new text under the next version of the id (`doc#c03.v2`, `.v3`, ...) and
remembers every id it ever issued with a fingerprint of its text, so an old id can answer Gone.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace

from rag.types import Chunk

# A later version of a chunk id: "{id issued by the chunker}.v{N}", N >= 2.
VERSION_MARK = ".v"

_VERSION_RE = re.compile(re.escape(VERSION_MARK) + r"([0-9]+)\Z")


def text_hash(text: str) -> str:
    """A stable fingerprint of a chunk's text (sha256, 16 hex digits; PostgreSQL computes the same)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def base_id(chunk_id: str) -> str:
    """The chunker's id behind a versioned id (`doc#c03.v2` -> `doc#c03`)."""
    match = _VERSION_RE.search(chunk_id)
    return chunk_id[: match.start()] if match else chunk_id


def versioned_chunks(chunks: Sequence[Chunk], issued: Mapping[str, str]) -> list[Chunk]:
    """`chunks` with ids that never name other text than they did before.

    `issued` maps every id ever stored for the document to the hash of its text. A chunk keeps
    the chunker's id when that id is new or named this very text; otherwise it takes the
    version of the id that named this text, or the next unused version (`doc#c03.v2`, `.v3`...).
    """
    versions: dict[str, dict[str, str]] = defaultdict(dict)  # base id -> text hash -> id
    highest: dict[str, int] = defaultdict(int)
    for chunk_id, digest in issued.items():
        base = base_id(chunk_id)
        versions[base].setdefault(digest, chunk_id)
        match = _VERSION_RE.search(chunk_id)
        highest[base] = max(highest[base], int(match.group(1)) if match else 1)
    out = []
    for chunk in chunks:
        base = chunk.chunk_id
        known = versions.get(base)
        if not known:
            out.append(chunk)
            continue
        same_text = known.get(text_hash(chunk.text))
        if same_text is None:
            highest[base] += 1
            same_text = f"{base}{VERSION_MARK}{highest[base]}"
        out.append(chunk if same_text == base else replace(chunk, chunk_id=same_text))
    return out
