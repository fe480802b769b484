"""The English resources a reader or the support check consults, opened once and handed down as one value.

`Tools` holds WordNet (`wordnet.WordNet`), the dependency parser (`syntax.Parser`) and the sentence
encoder's measurements (`meaning.Meaning`), each None when it is not installed or switched off.
`open_tools` opens them from the settings' values (the pipeline is built with `open_tools` over
`Settings`); `installed()` is what a caller that passes nothing gets: whatever is installed, found
without reading any setting. Opening reads no data: each resource loads on first use, once per process
per location.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rag.language.meaning import Meaning, open_meaning
from rag.language.syntax import Parser, open_parser
from rag.language.wordnet import WordNet, open_wordnet


@dataclass(frozen=True, slots=True, kw_only=True)
class Tools:
    """WordNet, the parser and the encoder's measurements; None: that resource is not used."""

    wordnet: WordNet | None = None
    parser: Parser | None = None
    meaning: Meaning | None = None


def open_tools(*, wordnet_dir: str = "", parser: str = "", encoder: str = "", encoder_dir: str = "") -> Tools:
    """The tools the settings name: `wordnet_dir` as `Settings.wordnet_dir` (`wordnet.open_wordnet`),
    `parser` as `Settings.parser`, `encoder` and `encoder_dir` as `Settings.encoder` and
    `Settings.encoder_dir` (`meaning.open_meaning`); the defaults find what is installed."""
    return Tools(
        wordnet=open_wordnet(wordnet_dir),
        parser=open_parser(parser),
        meaning=open_meaning(encoder, encoder_dir),
    )


@lru_cache(maxsize=1)
def installed() -> Tools:
    """Every installed resource (the tools of default settings), found once per process."""
    return open_tools()
