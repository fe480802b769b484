"""Small PDF and DOCX writers for fixtures and benchmarks, without any PDF or Office tool.

`pdf_bytes` writes a plain PDF 1.4 file (Helvetica text, one content stream per page, an /Info
title); `docx_bytes` builds a .docx with python-docx (a heading, paragraphs, a list, a table).

Usage: python -m benchmarks.formats_gen   (rewrites fixtures/formats/handbook.pdf and .docx)
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "formats"


def _pdf_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return "(" + escaped.encode("latin-1", "replace").decode("latin-1") + ")"


def pdf_bytes(title: str, pages: Sequence[Sequence[str]]) -> bytes:
    """A PDF with one page per item of `pages`, each a list of text lines; `title` goes in /Info."""
    objects: list[bytes] = []
    n_pages = len(pages)
    # 1 catalog, 2 page tree, 3 font, 4 info, then (page, content) pairs
    kids = " ".join(f"{5 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects.append(f"<< /Title {_pdf_string(title)} /Producer (rag formats_gen) >>".encode("latin-1"))
    for i, lines in enumerate(pages):
        body = ["BT", "/F1 11 Tf", "14 TL", "72 740 Td"]
        for line in lines:
            body.append(f"{_pdf_string(line)} Tj T*")
        body.append("ET")
        stream = "\n".join(body).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
            f" /Contents {6 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\n" % (len(objects) + 1))
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def docx_bytes(
    title: str,
    sections: Sequence[tuple[str, Sequence[str]]],
    *,
    items: Sequence[str] = (),
    table: Sequence[Sequence[str]] = (),
) -> bytes:
    """A .docx: `title` in core properties, then per section a "Heading 1" and its paragraphs;
    `items` as a bulleted list and `table` (first row the header) after the first section."""
    from docx import Document

    word = Document()
    word.core_properties.title = title
    for i, (heading, paragraphs) in enumerate(sections):
        word.add_heading(heading, level=1)
        for paragraph in paragraphs:
            word.add_paragraph(paragraph)
        if i == 0:
            for item in items:
                word.add_paragraph(item, style="List Bullet")
            if table:
                grid = word.add_table(rows=len(table), cols=len(table[0]))
                for r, row in enumerate(table):
                    for c, value in enumerate(row):
                        grid.cell(r, c).text = value
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()


HANDBOOK_PDF_PAGES = [
    [
        "Field Office Handbook",
        "",
        "Travel approvals",
        "Every trip outside the home region needs written approval from a team lead.",
        "Approval requests are answered within three working days.",
    ],
    [
        "Equipment returns",
        "Borrowed survey equipment must be returned within 14 days of the end of a project.",
        "Damaged equipment is reported to the logistics desk before it is returned.",
    ],
]

HANDBOOK_DOCX = {
    "title": "Laboratory Safety Guide",
    "sections": [
        (
            "Protective equipment",
            ["Safety goggles are worn in every wet laboratory at all times."],
        ),
        (
            "Waste disposal",
            ["Solvent waste is collected in the red containers beside each fume hood."],
        ),
    ],
    "items": ["Lab coats are buttoned.", "Gloves are changed between samples."],
    "table": [["Room", "Capacity"], ["Wet lab A", "12 people"], ["Clean room", "4 people"]],
}


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    (FIXTURES / "handbook.pdf").write_bytes(pdf_bytes("Field Office Handbook", HANDBOOK_PDF_PAGES))
    (FIXTURES / "safety.docx").write_bytes(docx_bytes(**HANDBOOK_DOCX))  # type: ignore[arg-type]
    print(f"wrote {FIXTURES / 'handbook.pdf'} and {FIXTURES / 'safety.docx'}")


if __name__ == "__main__":
    main()
