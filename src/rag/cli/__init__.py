"""The `rag` command line: thin click commands over the library, and terminal rendering."""

from rag.cli.commands import main

__all__ = ["main"]
