"""English tools that know nothing of requests: text (tokens, stems, sentences, code spans), the word
lists (`lexicon`), numbers and quantities in any spelling, WordNet, a dependency parser (`syntax`),
the local sentence encoder and meaning built on it, and text addressed to an assistant (`injection`).

May import: `rag.types`, `rag.errors` and the standard library and third-party packages; never
`rag.answer`, `rag.support`, `rag.reader`, `rag.ingest`, `rag.store`, `rag.api` or `rag.cli`.
"""
