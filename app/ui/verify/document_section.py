"""The compared fields of an altered page, under its NOT VERIFIED verdict (PROTOCOL §13).

Field, what the registered payslip says, what the page shows, and whether they agree: the desk
sees at a glance which figures were changed. These are the only employee data a NOT VERIFIED card
holds (the registered name only as the compared name field); plain text labels, never markup.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.document.compare import DocumentCheck, compared_lines
from app.ui.widgets.card_parts import Section, plain_label
from app.ui.widgets.style import PALETTES

TITLE = "Printed figures compared with the registered payslip"
HEADS = ("Field", "Registered payslip", "This page shows", "")
DIFFERS = "✗ Changed"
MATCHES = "✓ Same"
NOTES = {"differs": DIFFERS, "matches": MATCHES}
CHANGED_INK = PALETTES["not_verified"].strong


def compared_section(check: DocumentCheck) -> Section:
    """A section with one row per compared field; a changed one says so in words and bold."""
    section = Section(TITLE)
    section.setAccessibleName(TITLE)
    grid = section.grid
    for column, head in enumerate(HEADS):
        grid.addWidget(plain_label(head.upper(), "columnHead"), 0, column)
    for row, (result, (field, registered, shown)) in enumerate(
        zip(check.fields, compared_lines(check), strict=True), start=1
    ):
        changed = result.status == "differs"
        role = "keyValue" if changed else "fieldValue"
        grid.addWidget(plain_label(field, "fieldLabel"), row, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(plain_label(registered, "fieldValue", wrap=True), row, 1)
        shown_label = plain_label(shown, role, wrap=True)
        grid.addWidget(shown_label, row, 2)
        note = plain_label(NOTES.get(result.status, ""), role if changed else "fieldLabel")
        grid.addWidget(note, row, 3)
        if changed:  # red as well as bold and in words: a printout or a colour-blind eye reads it
            for label in (shown_label, note):
                label.setStyleSheet(f"color: {CHANGED_INK};")
    for column, stretch in enumerate((0, 0, 0, 1)):
        grid.setColumnStretch(column, stretch)
    grid.setHorizontalSpacing(36)
    return section
