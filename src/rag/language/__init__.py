"""English tools that know nothing of requests: text (tokens, stems, sentences, code spans), the word
lists (`lexicon`), numbers and quantities in any spelling, WordNet, a dependency parser (`syntax`),
the local sentence encoder and meaning built on it, and text addressed to an assistant (`injection`).
WordNet, the parser and the encoder are objects opened from an explicit location or switch, gathered
in one `tools.Tools` value that callers hand down; nothing here reads settings or the environment.

May import: `rag.types`, `rag.errors` and the standard library and third-party packages; never
`rag.answer`, `rag.support`, `rag.reader`, `rag.ingest`, `rag.store`, `rag.api` or `rag.cli`.
"""
