"""Grounded question answering over your own documents, with verified citations and honest refusals."""

__version__ = "0.1.0"
