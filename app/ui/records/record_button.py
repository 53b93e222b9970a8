"""What the verify screen's and the applicant check's "Save verification record…" buttons share:
the button itself and the sentence that says a record was not saved.

The two pages write different records (one payslip's receipt, or a set's) from different places,
so each keeps its own saving; a desk worker sees one button and one way of saying it failed.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QPushButton

from app.api.errors import ApiError

SAVE_TEXT = "Save verification record…"


def record_button(object_name: str, tooltip: str, save: Callable[[], None]) -> QPushButton:
    """The record button, hidden until its page has something a receipt can record."""
    button = QPushButton(SAVE_TEXT)
    button.setObjectName(object_name)
    button.setToolTip(tooltip)
    button.clicked.connect(lambda: save())
    button.hide()
    return button


def not_saved_sentence(exc: Exception, otherwise: str) -> str:
    """The one plain sentence for a record not written: the service's code when it made no
    receipt, a file that could not be written, else `otherwise` (what else can fail differs
    between the pages). No path and nothing of the record is in it."""
    if isinstance(exc, ApiError):
        words = f"the service made no receipt ({exc.code})"
    elif isinstance(exc, OSError):
        words = "the file could not be written"
    else:
        words = otherwise
    return f"The verification record was not saved: {words}."
