"""The look of the staff screens (Issue, Admin, Service, welcome), built on the verify screen's.

Same colours, type sizes, white rounded panels on the pale backdrop and the one blue primary
button, so the app reads as one product; plus what only forms need (inputs, tables, tabs, inline
errors). Each staff screen applies it to itself, so it looks the same inside the main window and
in an offscreen test screenshot.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from app.ui.widgets.style import (
    ACCENT,
    BACKDROP,
    INK,
    LINE,
    MUTED,
    PALETTES,
    SURFACE,
    screen_stylesheet,
)
from app.verify.presentation import local_moment

ERROR_COLOUR = PALETTES["not_verified"].strong
OK_COLOUR = PALETTES["verified"].strong


def staff_stylesheet() -> str:
    return (
        screen_stylesheet(False)
        + f"""
    QWidget#staffScreen {{ background: {BACKDROP}; color: {INK}; }}
    QLabel#hint {{ color: {MUTED}; }}
    QLabel#fieldError {{ color: {ERROR_COLOUR}; }}
    QLabel#statusOk {{ color: {OK_COLOUR}; font-weight: 600; }}
    QLabel#statusError {{ color: {ERROR_COLOUR}; font-weight: 600; }}
    QLabel#privacyNote {{ color: {PALETTES["verified"].strong};
        background: {PALETTES["verified"].tint}; border-radius: 6px; padding: 6px 10px; }}
    QLineEdit, QComboBox, QDateEdit, QDoubleSpinBox, QSpinBox {{ padding: 6px 8px;
        border: 1px solid #aab4c0; border-radius: 6px; background: {SURFACE};
        font-family: sans-serif; min-height: 20px; }}
    QLineEdit[invalid="true"], QComboBox[invalid="true"], QDateEdit[invalid="true"] {{
        border: 2px solid {ERROR_COLOUR}; }}
    QTabWidget::pane {{ border: 1px solid {LINE}; border-radius: 8px; background: {SURFACE};
        top: -1px; }}
    QTabBar::tab {{ padding: 8px 18px; border: 1px solid {LINE}; border-bottom: none;
        border-top-left-radius: 6px; border-top-right-radius: 6px; background: #e6eaf0;
        color: {MUTED}; margin-right: 2px; }}
    QTabBar::tab:selected {{ background: {SURFACE}; color: {INK}; font-weight: 600; }}
    QTableView, QTableWidget {{ background: {SURFACE}; border: 1px solid {LINE};
        border-radius: 6px; gridline-color: #e7ebf0; selection-background-color: #d7e6f5;
        selection-color: {INK}; }}
    QHeaderView::section {{ background: #eef1f5; color: {MUTED}; font-weight: 700;
        border: none; border-bottom: 1px solid {LINE}; padding: 6px 8px; }}
    QProgressBar {{ border: 1px solid {LINE}; border-radius: 6px; background: #e6eaf0;
        text-align: center; min-height: 22px; color: {INK}; }}
    QProgressBar::chunk {{ background: {ACCENT}; border-radius: 5px; }}
    QToolButton#disclosure {{ border: none; color: {ACCENT}; font-weight: 600;
        padding: 4px 0px; }}
    QCheckBox, QRadioButton {{ spacing: 8px; }}
    QPushButton#primary:disabled {{ background: #c9d3de; border: 1px solid #c9d3de;
        color: #f4f6f8; }}
    QPushButton#linkButton:disabled {{ color: #9aa3ad; text-decoration: none; }}
    QGroupBox {{ border: 1px solid {LINE}; border-radius: 8px; margin-top: 14px;
        padding: 12px 10px 8px 10px; font-weight: 600; background: {SURFACE}; }}
    QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px;
        color: {MUTED}; }}
    QGroupBox QLabel {{ font-weight: normal; }}
    """
    )


def staff_screen(widget: QWidget) -> None:
    """Give a staff screen its backdrop and stylesheet."""
    widget.setObjectName("staffScreen")
    widget.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
    widget.setStyleSheet(staff_stylesheet())


def label(text: str, name: str = "", *, wrap: bool = True) -> QLabel:
    widget = QLabel(text)
    if name:
        widget.setObjectName(name)
    widget.setWordWrap(wrap)
    return widget


def titled_column(
    widget: QWidget,
    title: str,
    subtitle: str = "",
    *,
    margins: tuple[int, int, int, int] = (24, 20, 24, 20),
    spacing: int = 12,
) -> QVBoxLayout:
    """A staff screen's or dialog's layout, headed by its title and one line on what it is for,
    so every screen opens the same way."""
    layout = QVBoxLayout(widget)
    layout.setContentsMargins(*margins)
    layout.setSpacing(spacing)
    layout.addWidget(label(title, "screenTitle"))
    if subtitle:
        layout.addWidget(label(subtitle, "screenSubtitle"))
    return layout


def panel(frame: QFrame, title: str = "") -> QVBoxLayout:
    """Make ``frame`` a white rounded panel with an optional small-caps title; its layout."""
    frame.setObjectName("section")
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(16, 12, 16, 14)
    layout.setSpacing(8)
    if title:
        layout.addWidget(label(title.upper(), "sectionTitle"))
    return layout


def section(title: str = "") -> tuple[QFrame, QVBoxLayout]:
    """A white rounded panel with an optional small-caps title, as on the verify screen."""
    frame = QFrame()
    return frame, panel(frame, title)


def set_status(widget: QLabel, text: str, *, error: bool = False) -> None:
    """A status line in words and colour (the words alone carry the meaning)."""
    widget.setText(text)
    widget.setObjectName("statusError" if error else "statusOk")
    widget.style().unpolish(widget)
    widget.style().polish(widget)


def local_time(iso: str | None) -> str:
    """An ISO timestamp from the service as this computer's local date and time, in words."""
    moment = local_moment(iso) if iso else None
    return moment.strftime("%d %b %Y, %H:%M") if moment else (iso or "")


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"
