"""Accessible names for every input, button and list, so a screen reader says what each one is.

Most controls show their purpose in a label beside them, not on themselves, and Qt does not link
the two unless told. Naming each of the app's hundred-odd controls by hand is easy to forget on
the next screen, so this names them when they are shown (Qt's Show event: fully built by
then; one application-wide event filter): a control without an accessible name gets one
from, in order,

1. its own text (buttons, check boxes), without ``&`` mnemonics or a trailing ellipsis;
2. its label in a form row (``QFormLayout.labelForField``), or the label just before it in its
   row or grid row (searched up through the widget that wraps it, e.g. a field editor);
3. its placeholder text, then its tooltip.

Names set in code are never replaced. The result regions (the verdict card) are named in code.

Qt's own dialogs (the non-native file dialog, the colour and font dialogs) are left alone: they
name their controls themselves, and walking their layouts while they build and rebuild
themselves crashed the app (a segfault on every *Open PDF...* where no GTK theme provides a
native dialog, issue 35). The filter touches only the app's own windows.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSlider,
    QAbstractSpinBox,
    QApplication,
    QColorDialog,
    QComboBox,
    QFileDialog,
    QFontDialog,
    QFormLayout,
    QGridLayout,
    QHeaderView,
    QLabel,
    QLayout,
    QLineEdit,
    QPlainTextEdit,
    QScrollBar,
    QTabWidget,
    QTextEdit,
    QWidget,
)

CONTROLS = (
    QAbstractButton,
    QLineEdit,
    QAbstractSpinBox,
    QComboBox,
    QTextEdit,
    QPlainTextEdit,
    QAbstractItemView,
    QAbstractSlider,
    QTabWidget,
)
"""What a person operates, and so what must carry a name."""
FOREIGN_WINDOWS = (QFileDialog, QColorDialog, QFontDialog)
"""Qt's own dialogs: they name their controls, and the filter must never walk them."""
_TAGS = re.compile(r"<[^>]+>")
_WRAPPER_DEPTH = 3


def needs_name(widget: QWidget) -> bool:
    """A control (see :data:`CONTROLS`) that is not just part of another control."""
    if not isinstance(widget, CONTROLS):
        return False
    if isinstance(widget, QScrollBar | QHeaderView):
        return False  # part of its scroll area or table, which says what it holds
    parent = widget.parentWidget()
    # The line edit inside a spin box or an editable combo box is named by its owner.
    return not isinstance(parent, QAbstractSpinBox | QComboBox)


def clean(text: str) -> str:
    text = _TAGS.sub("", text).replace("&&", "\0").replace("&", "").replace("\0", "&")
    text = " ".join(text.split())
    return text.strip(" :*").removesuffix("…").removesuffix("...").strip(" ▾▴▸")


def _holding(layout: QLayout, widget: QWidget) -> tuple[QLayout, int] | None:
    for index in range(layout.count()):
        item = layout.itemAt(index)
        if item is None:
            continue
        if item.widget() is widget:
            return layout, index
        child = item.layout()
        if child is not None and (found := _holding(child, widget)) is not None:
            return found
    return None


def _label_before(widget: QWidget) -> str:
    parent = widget.parentWidget()
    top = parent.layout() if parent is not None else None
    found = _holding(top, widget) if top is not None else None
    if found is None:
        return ""
    layout, index = found
    if isinstance(layout, QFormLayout):
        label = layout.labelForField(widget)
        return clean(label.text()) if isinstance(label, QLabel) else ""
    if isinstance(layout, QGridLayout):
        position: tuple[int, int, int, int] = layout.getItemPosition(index)  # type: ignore[assignment]
        row, column = position[0], position[1]
        for before in range(column - 1, -1, -1):
            item = layout.itemAtPosition(row, before)
            shown = item.widget() if item is not None else None
            if isinstance(shown, QLabel) and clean(shown.text()):
                return clean(shown.text())
        return ""
    for before in range(index - 1, -1, -1):
        item = layout.itemAt(before)
        shown = item.widget() if item is not None else None
        if isinstance(shown, QLabel) and clean(shown.text()):
            return clean(shown.text())
        if shown is not None:
            return ""
    return ""


def name_for(widget: QWidget) -> str:
    """The name a screen reader should say for ``widget`` (empty if nothing fits)."""
    if isinstance(widget, QAbstractButton) and (text := clean(widget.text())):
        return text
    holder: QWidget | None = widget
    for _ in range(_WRAPPER_DEPTH):
        if holder is None:
            break
        if text := _label_before(holder):
            return text
        holder = holder.parentWidget()
    if isinstance(widget, QLineEdit) and (text := clean(widget.placeholderText())):
        return text
    if isinstance(widget, QTabWidget) and widget.count():
        return "Tabs: " + ", ".join(clean(widget.tabText(i)) for i in range(widget.count()))
    return clean(widget.toolTip())


def name_controls(root: QWidget) -> None:
    """Name every unnamed control under ``root`` (and ``root`` itself) now."""
    for widget in [root, *root.findChildren(QWidget)]:
        name_one(widget)


def in_foreign_window(widget: QWidget) -> bool:
    """Is ``widget`` (or a window it belongs to) one of Qt's own dialogs?"""
    holder: QWidget | None = widget
    while holder is not None:
        if isinstance(holder, FOREIGN_WINDOWS):
            return True
        holder = holder.parentWidget()
    return False


def name_one(widget: QWidget) -> None:
    if in_foreign_window(widget):
        return
    if needs_name(widget) and not widget.accessibleName() and (text := name_for(widget)):
        widget.setAccessibleName(text)


class _Namer(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Show and isinstance(watched, QWidget):
            name_one(watched)
        return False


_namer: _Namer | None = None


def install() -> None:
    """Name controls as they are first shown, app-wide (idempotent)."""
    global _namer
    app = QApplication.instance()
    if _namer is None and app is not None:
        _namer = _Namer(app)
        app.installEventFilter(_namer)
