"""Files shaped like what payroll systems export, for the pay-run-from-export tests and samples:
PDFs with real text on their pages (a combined payslip PDF), an image-only "scanned" PDF, and
XLSX workbooks with real date and number cells.

The PDFs are drawn with pikepdf (a content stream in Helvetica), so pypdf extracts their text as
it would from a payroll system's PDF; reportlab is not needed.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pikepdf


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_pdf(pages: Sequence[Sequence[str]]) -> bytes:
    """An A4 PDF whose page i shows the lines `pages[i]` as real text."""
    pdf = pikepdf.new()
    font = pdf.make_indirect(
        pikepdf.Dictionary(
            Type=pikepdf.Name.Font,
            Subtype=pikepdf.Name.Type1,
            BaseFont=pikepdf.Name.Helvetica,
            Encoding=pikepdf.Name.WinAnsiEncoding,
        )
    )
    for lines in pages:
        ops = ["BT", "/F1 12 Tf", "14 TL", "50 790 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("cp1252")
        page = pdf.add_blank_page(page_size=(595, 842))
        page.Resources = pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font))
        page.Contents = pdf.make_stream(stream)
    buffer = io.BytesIO()
    pdf.save(buffer)
    return buffer.getvalue()


def image_pdf(pages: int = 2) -> bytes:
    """A "scanned" PDF: every page is a grey image, with no text at all."""
    pdf = pikepdf.new()
    for _ in range(pages):
        image = pikepdf.Stream(pdf, bytes([200]) * (40 * 40))
        image.Type = pikepdf.Name.XObject
        image.Subtype = pikepdf.Name.Image
        image.Width, image.Height = 40, 40
        image.ColorSpace = pikepdf.Name.DeviceGray
        image.BitsPerComponent = 8
        page = pdf.add_blank_page(page_size=(595, 842))
        page.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(Im0=image))
        page.Contents = pdf.make_stream(b"q 400 0 0 400 100 300 cm /Im0 Do Q")
    buffer = io.BytesIO()
    pdf.save(buffer)
    return buffer.getvalue()


def payslip_page_lines(external_id: str, name: str, page: int, pages: int) -> list[str]:
    """What a payroll system prints on a payslip page (the name and id on the first page
    only, as many systems do; later pages say "continued")."""
    if page == 1:
        return [
            "Demo Payroll Pty Ltd - Payslip",
            f"Employee: {name}",
            f"Employee ID: {external_id}",
            "Pay period: 30/10/2026 to 12/11/2026",
            "Gross earnings $3,846.15",
            f"Page {page} of {pages}",
        ]
    return ["Payslip (continued)", "Leave balances and year to date", f"Page {page} of {pages}"]


def write_xlsx(
    path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None
) -> Path:
    """A workbook whose first sheet has an optional title row and a blank row, then the header
    and the rows (dates stay date cells, numbers number cells)."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Pay Run"
    if title is not None:
        sheet.append([title])
        sheet.append([])
    sheet.append(list(header))
    for row in rows:
        sheet.append(list(row))
        for cell in sheet[sheet.max_row]:
            if hasattr(cell.value, "year"):
                cell.number_format = "DD/MM/YYYY"
    book.save(path)
    _use_shared_strings(path)
    return path


_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_CELL_RE = re.compile(
    r'<c r="([A-Z]+[0-9]+)"([^>]*) t="inlineStr"([^>]*)><is><t>(.*?)</t></is></c>'
)


def _use_shared_strings(path: Path) -> None:
    """Rewrite openpyxl's inline strings as a shared-string table, as Excel and payroll systems
    write workbooks (and as their readers meet them)."""
    with zipfile.ZipFile(path) as source:
        parts = {name: source.read(name) for name in source.namelist()}
    strings: dict[str, int] = {}

    def shared(match: re.Match[str]) -> str:
        text = match.group(4)
        index = strings.setdefault(text, len(strings))
        return f'<c r="{match.group(1)}"{match.group(2)} t="s"{match.group(3)}><v>{index}</v></c>'

    sheet = "xl/worksheets/sheet1.xml"
    parts[sheet] = _CELL_RE.sub(shared, parts[sheet].decode("utf-8")).encode("utf-8")
    items = "".join(f'<si><t xml:space="preserve">{t}</t></si>' for t in strings)
    parts["xl/sharedStrings.xml"] = (
        f'<sst xmlns="{_MAIN}" count="{len(strings)}" uniqueCount="{len(strings)}">{items}</sst>'
    ).encode()
    types = parts["[Content_Types].xml"].decode("utf-8")
    parts["[Content_Types].xml"] = types.replace(
        "</Types>",
        '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.'
        'openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>',
    ).encode("utf-8")
    rels = parts["xl/_rels/workbook.xml.rels"].decode("utf-8")
    parts["xl/_rels/workbook.xml.rels"] = rels.replace(
        "</Relationships>",
        '<Relationship Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/sharedStrings" Target="sharedStrings.xml" Id="rIdStrings"/>'
        "</Relationships>",
    ).encode("utf-8")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in parts.items():
            target.writestr(name, data)
