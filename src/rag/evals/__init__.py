"""Evaluation harness: golden set, external benchmarks, threshold sweeps (`rag eval`)."""
