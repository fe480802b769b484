"""Markdown and plain text: the body after the front matter is the document text as written.

Nothing is parsed here: chunking finds the sections under '#' heading lines and the code in
fences and indented blocks itself (an empty `Layout`), and the first '#' heading titles the file.
"""

from __future__ import annotations

from rag.ingest.parsed import Parsed


def parse_markdown(body: str, where: str) -> Parsed:
    """`body` as the text, with no title or layout of its own; never raises."""
    return Parsed(text=body)
