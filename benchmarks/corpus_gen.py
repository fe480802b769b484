"""Deterministic synthetic corpus: N Markdown documents of about 5 chunks each, for the benchmarks.

Words follow a Zipf-like distribution over an invented vocabulary plus common English words,
so BM25 sees realistic document frequencies. Same (n, seed) -> byte-identical files.

Usage: python -m benchmarks.corpus_gen OUT_DIR [N]
"""

from __future__ import annotations

import random
import sys
from itertools import accumulate
from pathlib import Path

SYLLABLES = "ka lo mi ne ru sa ti vo ze ba de fi go hu ja ke li mo nu pa qui ro su ta ve wo xi yu zo".split()
COMMON = (
    "the a of to and in is for on with as by at from that this be are it or can your you when each "
    "project team workspace file user account setting report plan data access member task update page"
).split()
SECTIONS_PER_DOC = 5
SENTENCES_PER_SECTION = (5, 7)
WORDS_PER_SENTENCE = (10, 18)


def vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    ordered = sorted(words)
    rng.shuffle(ordered)  # frequency rank must not follow the alphabet
    return ordered


class Generator:
    """Draws words and sentences; one instance per corpus, so output depends only on the seed."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        # Zipf-like weights: rank r gets 1 / (r + 10)
        self.cum = list(accumulate(1.0 / (r + 10) for r in range(len(self.words))))

    def word(self) -> str:
        if self.rng.random() < 0.35:
            return self.rng.choice(COMMON)
        return self.rng.choices(self.words, cum_weights=self.cum)[0]

    def sentence(self) -> str:
        n = self.rng.randint(*WORDS_PER_SENTENCE)
        words = [self.word() for _ in range(n)]
        if self.rng.random() < 0.3:
            words.insert(self.rng.randrange(n), str(self.rng.choice([5, 10, 30, 90, 100, 250, 500])))
        return " ".join(words).capitalize() + "."

    def document(self, i: int, access: str = "") -> str:
        title = " ".join(self.word() for _ in range(3)).title()
        lines = [
            "---",
            f"title: {title}",
            f"updated: 2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
            f"url: https://docs.example.com/synthetic/{i}",
            *([f"access: [{access}]"] if access else []),
            "---",
            f"# {title}",
            "",
        ]
        for s in range(SECTIONS_PER_DOC):
            lines += [f"## {' '.join(self.word() for _ in range(2)).capitalize()} {s + 1}", ""]
            count = self.rng.randint(*SENTENCES_PER_SECTION)
            lines += [" ".join(self.sentence() for _ in range(count)), ""]
        return "\n".join(lines)


# With `restricted=True`, one document in ten is HR-only and one in ten security-only (front
# matter `access`); the text is the same as without, so the two corpora compare directly.
RESTRICTED = {3: "hr", 7: "security"}


def generate(out: Path, n: int, *, seed: int = 7, restricted: bool = False) -> Path:
    """Write `n` documents into out/NN/doc-XXXXX.md (100 per folder); returns `out`."""
    gen = Generator(seed)
    for i in range(n):
        folder = out / f"{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        access = RESTRICTED.get(i % 10, "") if restricted else ""
        (folder / f"doc-{i:05d}.md").write_text(gen.document(i, access), encoding="utf-8")
    return out


def questions(n: int, *, seed: int = 11) -> list[str]:
    """`n` benchmark questions drawn from the same vocabulary (some with words no document has)."""
    gen = Generator(7)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [gen.word() for _ in range(rng.randint(3, 7))]
        if rng.random() < 0.2:
            words.append("zzunknownword")
        out.append("How does " + " ".join(words) + " work?")
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    generate(target, count)
    print(f"wrote {count} documents to {target}")
