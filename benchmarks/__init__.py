"""Benchmarks behind `make bench`: figures are printed, never asserted."""
