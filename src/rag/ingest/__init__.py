"""Files in, chunks out: readers per format, section-aware chunking, the indexer, embeddings."""
