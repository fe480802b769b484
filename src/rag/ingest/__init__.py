"""Files in, chunks out: `formats` (the table of document formats, the dispatch, and what every format
shares) with one parser module per format (`markdown`, `rst`, `html`, `pdf`, `word`), each returning
`parsed.Parsed`; `chunking` (section-aware chunks with exact offsets); `indexer` (idempotent runs,
every skipped file with its reason, embeddings packed across documents).

May import: `rag.language`, `rag.embeddings`, `rag.store`, and the top level (`types`, `errors`,
`config`, `access`, `serialize`, `voyage`, `breaker`); never `rag.answer`, `rag.support`,
`rag.reader`, `rag.evals`, `rag.api` or `rag.cli`.
"""
