"""Colours, type sizes and status icons of the verify screen, kept in one place.

A verdict is always told three ways at once: colour, icon and words. Colour alone fails for
colour-blind staff, on a kiosk screen in glare and in a greyscale screenshot attached to a support
ticket. The icons are painted here rather than loaded from files so that a frozen build cannot
lose them and no resource lookup can fail while a result is being shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen, QPixmap, QPolygonF

from service.protocol.vocabulary import Verdict

Tone = Literal["verified", "not_verified", "error", "pending"]
"""A colour-and-icon scheme: one per verdict, and "pending" while a check runs."""

VERDICT_TONES: dict[Verdict, Tone] = {
    Verdict.VERIFIED: "verified",
    Verdict.NOT_VERIFIED: "not_verified",
    Verdict.CANNOT_VERIFY: "error",
}
"""The tone each verdict is shown in (the verify card, the applicant view, the set record)."""


@dataclass(frozen=True)
class Palette:
    """One verdict's colours: a strong banner colour with white text, and a pale tint."""

    strong: str
    tint: str


# Contrast of white text on each strong colour is at least 4.9:1 (WCAG AA for normal text).
PALETTES: dict[Tone, Palette] = {
    "verified": Palette("#1b6e31", "#e8f3eb"),
    "not_verified": Palette("#b3261e", "#fbeceb"),
    "error": Palette("#8a5300", "#fdf3e1"),
    "pending": Palette("#2f4d6b", "#edf2f7"),
}

INK = "#1d2733"
MUTED = "#5b6675"
LINE = "#d5dbe3"
SURFACE = "#ffffff"
BACKDROP = "#f3f5f8"
ACCENT = "#1f5f99"


def type_scale(kiosk: bool) -> float:
    """How much larger everything is in kiosk mode (read standing, at arm's length)."""
    return 1.3 if kiosk else 1.0


BASE_POINTS = 11.0


def screen_font_points(kiosk: bool) -> float:
    """The body text size of the screen (the stylesheet's default for every child)."""
    return BASE_POINTS * type_scale(kiosk)


def screen_stylesheet(kiosk: bool) -> str:
    """The stylesheet of the verify screen and its result card."""
    s = type_scale(kiosk)

    def pt(size: float) -> str:
        return f"{round(size * s)}pt"

    return f"""
    * {{ font-size: {pt(BASE_POINTS)}; }}
    QWidget#verifyScreen {{ background: {BACKDROP}; color: {INK}; }}
    QLabel {{ color: {INK}; }}
    QLabel#screenTitle {{ font-size: {pt(18)}; font-weight: 600; }}
    QLabel#screenSubtitle, QLabel#hint {{ color: {MUTED}; }}
    QLabel#sectionTitle {{ font-size: {pt(10)}; font-weight: 700; color: {MUTED};
        letter-spacing: 1px; }}
    QFrame#panel, QFrame#section {{ background: {SURFACE}; border: 1px solid {LINE};
        border-radius: 10px; }}
    QFrame#section QLabel, QFrame#panel QLabel {{ background: transparent; border: none; }}
    QFrame#panel QLabel#cameraStatus {{ padding: 6px 10px; border-radius: 6px;
        background: {PALETTES["pending"].tint}; border: 1px solid {LINE}; }}
    QFrame#panel QLabel#cameraStatus[problem="true"] {{ background: {PALETTES["error"].tint};
        border: 1px solid {PALETTES["error"].strong}; color: {PALETTES["error"].strong};
        font-weight: 600; }}
    QFrame#panel QLabel#preview {{ background: #20262e; color: #cfd6df; border-radius: 8px; }}
    QLabel#serviceStatus {{ color: {PALETTES["verified"].strong}; font-weight: 600;
        padding: 6px 4px; }}
    QLabel#serviceStatus[problem="true"] {{ color: {PALETTES["not_verified"].strong}; }}
    QLabel#serviceStatus[checking="true"] {{ color: {MUTED}; }}
    QFrame#panel QLabel#inputNotice {{ padding: 8px 10px; border-radius: 6px; font-weight: 600;
        background: {PALETTES["error"].tint}; border: 1px solid {PALETTES["error"].strong};
        color: {PALETTES["error"].strong}; }}
    QFrame#panel QLabel#inputNotice[tone="genuine"] {{ background: {PALETTES["verified"].tint};
        border: 1px solid {PALETTES["verified"].strong}; color: {PALETTES["verified"].strong}; }}
    QFrame#panel QLabel#inputNotice[tone="altered"] {{
        background: {PALETTES["not_verified"].tint};
        border: 1px solid {PALETTES["not_verified"].strong};
        color: {PALETTES["not_verified"].strong}; }}
    QFrame#panel QLabel#inputNotice[tone="checking"] {{ background: {PALETTES["pending"].tint};
        border: 1px solid {PALETTES["pending"].strong}; color: {PALETTES["pending"].strong}; }}
    QLabel#fieldLabel {{ color: {MUTED}; }}
    QLabel#fieldValue {{ font-weight: 600; }}
    QLabel#keyValue {{ font-weight: 700; font-size: {pt(14)}; }}
    QLabel#itemGroup {{ font-weight: 700; color: {MUTED}; }}
    QLabel#columnHead {{ color: {MUTED}; font-size: {pt(9)}; font-weight: 700; }}
    QLabel#footnote {{ color: {MUTED}; font-size: {pt(9.5)}; }}
    QLabel#errorCode {{ color: {MUTED}; font-family: monospace; }}
    QLineEdit {{ padding: 7px 9px; border: 1px solid #aab4c0; border-radius: 6px;
        background: {SURFACE}; font-family: monospace; }}
    QLineEdit:focus {{ border: 2px solid {ACCENT}; padding: 6px 8px; }}
    QPushButton {{ padding: 7px 14px; border: 1px solid #aab4c0; border-radius: 6px;
        background: {SURFACE}; color: {INK}; }}
    QPushButton:hover {{ background: #eef3f8; }}
    QPushButton:focus {{ border: 2px solid {ACCENT}; padding: 6px 13px; }}
    QPushButton:disabled {{ color: #9aa3ad; }}
    QPushButton#primary {{ background: {ACCENT}; color: white; border: 1px solid {ACCENT};
        font-weight: 600; }}
    QPushButton#primary:hover {{ background: #194f80; }}
    QPushButton#primary:focus {{ border: 2px solid #0b2f52; }}
    QPushButton#sample {{ background: {PALETTES["pending"].tint}; }}
    QPushButton#bannerButton {{ background: rgba(255,255,255,0.16); color: white;
        border: 1px solid rgba(255,255,255,0.7); font-weight: 600; }}
    QPushButton#bannerButton:hover {{ background: rgba(255,255,255,0.28); }}
    QPushButton#bannerButton:focus {{ border: 3px solid white; padding: 5px 12px; }}
    QPushButton#linkButton {{ border: none; background: transparent; color: {ACCENT};
        text-decoration: underline; padding: 2px 4px; }}
    QPushButton#linkButton:focus {{ border: 2px solid {ACCENT}; padding: 0px 2px; }}
    QLabel#bannerHeadline {{ color: white; font-size: {pt(26)}; font-weight: 800;
        letter-spacing: 1px; }}
    QLabel#bannerText {{ color: white; font-size: {pt(12.5)}; }}
    QLabel#countdown {{ color: white; font-size: {pt(10.5)}; }}
    QScrollArea {{ border: none; background: transparent; }}
    QScrollArea > QWidget > QWidget {{ background: transparent; }}
    """


def banner_stylesheet(tone: Tone) -> str:
    return f"QFrame#banner {{ background: {PALETTES[tone].strong}; border-radius: 10px; }}"


def status_icon(tone: Tone, size: int, *, on_colour: bool = True) -> QPixmap:
    """A round badge with a check, a cross, an exclamation mark or dots.

    With ``on_colour`` the disc is white and the glyph takes the verdict's colour (for the
    coloured banner); otherwise the disc takes the colour and the glyph is white.
    """
    ratio = 2.0  # painted at twice the size so it stays crisp on high-DPI screens
    pixmap = QPixmap(round(size * ratio), round(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    strong = QColor(PALETTES[tone].strong)
    disc, glyph = (QColor("white"), strong) if on_colour else (strong, QColor("white"))
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(disc)
    if tone == "error":
        # A warning triangle, not a disc: the shape itself says "caution".
        triangle = QPolygonF(
            [
                QPointF(size / 2, size * 0.06),
                QPointF(size * 0.97, size * 0.92),
                QPointF(size * 0.03, size * 0.92),
            ]
        )
        path = QPainterPath()
        path.addPolygon(triangle)
        path.closeSubpath()
        painter.drawPath(path)
    else:
        painter.drawEllipse(QRectF(1, 1, size - 2, size - 2))
    pen = QPen(glyph, max(2.0, size * 0.11))
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    if tone == "verified":
        check = QPainterPath(QPointF(size * 0.28, size * 0.52))
        check.lineTo(QPointF(size * 0.44, size * 0.68))
        check.lineTo(QPointF(size * 0.73, size * 0.35))
        painter.drawPath(check)
    elif tone == "not_verified":
        a, b = size * 0.33, size * 0.67
        painter.drawLine(QPointF(a, a), QPointF(b, b))
        painter.drawLine(QPointF(b, a), QPointF(a, b))
    elif tone == "error":
        painter.drawLine(QPointF(size / 2, size * 0.36), QPointF(size / 2, size * 0.62))
        painter.drawPoint(QPointF(size / 2, size * 0.77))
    else:
        for x in (0.3, 0.5, 0.7):
            painter.drawPoint(QPointF(size * x, size / 2))
    painter.end()
    return pixmap
