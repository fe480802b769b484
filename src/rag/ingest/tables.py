"""The text of a table, shared by the formats that read tables as cells (HTML, DOCX).

A table with a header row writes each data row as one line naming every cell by its column
header ("- Role: Engineer; Laptop: ThinkPad X1; Memory: 32 GB"): a chunk that holds the row holds
its headers, a search for a cell's value and its header finds the row, and a citation of the row
is one line. The offline reader reads such a line as one statement. A table without a header row
keeps Markdown rows ("| a | b |"), which the reader states as "a: b".
"""

from __future__ import annotations

Cell = tuple[str, int]
"""One column of a row: the cell's text and the columns it spans (("", 0) for the columns after
the first of a spanning cell). A cell spanning rows is repeated in each."""


def table_text(grid: list[list[Cell]], head: int) -> str:
    """The lines of a table whose first `head` rows are its header (0: it has none), one per row
    with text; "" for a table without text."""
    if head and head < len(grid):
        headers = column_headers(grid[:head])
        lines = [keyed_row(headers, row) for row in grid[head:]]
    else:
        lines = [pipe_row(row) for row in grid]
    return "\n".join(line for line in lines if line)


def column_headers(head: list[list[Cell]]) -> list[str]:
    """Each column's header: the texts of the header rows above it, top first, a spanning cell's
    text over every column it spans."""
    width = max((len(row) for row in head), default=0)
    headers: list[str] = []
    for col in range(width):
        names: list[str] = []
        for row in head:
            name = _covering(row, col)
            if name and (not names or names[-1] != name):
                names.append(name)
        headers.append(" ".join(names))
    return headers


def _covering(row: list[Cell], col: int) -> str:
    """The text of the cell that covers column `col` of `row` ("" past its end)."""
    if col >= len(row):
        return ""
    while col > 0 and row[col][1] == 0:
        col -= 1
    return row[col][0]


def keyed_row(headers: list[str], row: list[Cell]) -> str:
    """ "- Header: cell; Header: cell" for the row's cells with text (a cell under no header stands
    alone); a lone cell spanning the whole row (a group label) as it is; "" for an empty row."""
    filled = [(col, text) for col, (text, _) in enumerate(row) if text]
    if not filled:
        return ""
    if len(filled) == 1 and row[filled[0][0]][1] >= max(len(headers), 2):
        return filled[0][1]
    pairs = [
        f"{headers[col]}: {text}" if col < len(headers) and headers[col] else text for col, text in filled
    ]
    return "- " + "; ".join(pairs)


def pipe_row(row: list[Cell]) -> str:
    """A Markdown row ("| a | b |"), one cell per spanning cell, "|" in a cell escaped; "" when empty."""
    cells = [text.replace("|", "\\|") for text, span in row if span]
    return "| " + " | ".join(cells) + " |" if any(cells) else ""
