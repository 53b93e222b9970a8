"""Badge and PDF helpers, re-exported from the protocol package the service itself uses.

The issuer renders badges with the very function behind registerAndBuildBarcode, so a badge made
here and one the service returns for the same scan URL are pixel-identical; and stamps PDFs with
the same helper the kiosk's reader is tested against.
"""

from __future__ import annotations

from service.protocol.badge import BadgeError, render_badge_png, render_badge_svg
from service.protocol.pdf_metadata import write_payload_metadata
from service.protocol.pdf_stamp import stamp_badge

__all__ = [
    "BADGE_WIDTH",
    "CORNERS",
    "BadgeError",
    "render_badge_png",
    "render_badge_svg",
    "stamp_badge",
    "write_payload_metadata",
]

#: The badge width the spec names for registerAndBuildBarcode.
BADGE_WIDTH = 720
#: Where `stamp_badge` can put the badge on a page.
CORNERS: tuple[str, ...] = ("bottom-right", "bottom-left", "top-right", "top-left")
