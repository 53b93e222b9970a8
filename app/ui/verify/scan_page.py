"""The verify screen's waiting state: the camera preview and the operator's own inputs.

Only the inputs this screen offers are built: the kiosk has no file buttons (file dialogs open
the file system to whoever stands at the kiosk). Plain widgets and signals; the screen decides
what each input does.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.ui.widgets.card_parts import plain_label
from app.ui.widgets.fit_screen import scrolling
from service.composition.demo import DemoSample

CAMERA_HINT = "Hold the payslip's QR code inside the frame"


def inputs_sentence(kiosk: bool, camera: bool) -> str:
    """The screen's subtitle: names only the inputs the page offers (the kiosk has no files)."""
    parts = []
    if camera:
        parts.append("hold its QR badge to the camera")
    if not kiosk:
        parts.append("drop or open the PDF")
    parts.append("scan or type the code text" if kiosk else "paste the code text")
    text = "; ".join(parts[:-1]) + ("; or " if len(parts) > 1 else "") + parts[-1]
    return text[0].upper() + text[1:] + "."


class ScanPage(QWidget):
    """Camera preview and status, file buttons, the code field, the notice and demo samples.

    Signals:
        submitted(): Enter in the code field, or Verify.
        image_requested(), pdf_requested(): the open buttons (desk only).
        sample_requested(str): a demo sample's button; carries its scan URL.
    """

    submitted = Signal()
    image_requested = Signal()
    pdf_requested = Signal()
    sample_requested = Signal(str)

    def __init__(
        self,
        kiosk: bool,
        camera_enabled: bool,
        samples: list[DemoSample],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.kiosk = kiosk
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(18)

        camera = QFrame()
        camera.setObjectName("panel")
        column = QVBoxLayout(camera)
        column.setContentsMargins(14, 14, 14, 14)
        column.setSpacing(10)
        column.addWidget(plain_label("CAMERA", "sectionTitle"))
        self.preview = QLabel("Starting the camera…")
        self.preview.setObjectName("preview")
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setMinimumSize(240, 180)
        self.preview.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.preview.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        column.addWidget(self.preview, 1)
        self.camera_status = plain_label(
            CAMERA_HINT if camera_enabled else "Camera off", "cameraStatus", wrap=True
        )
        column.addWidget(self.camera_status)
        row.addWidget(camera, 3)

        inputs = QFrame()
        inputs.setObjectName("panel")
        stack = QVBoxLayout(inputs)
        stack.setContentsMargins(18, 14, 18, 18)
        stack.setSpacing(10)

        self.open_image_button = QPushButton("Open image…")
        self.open_pdf_button = QPushButton("Open PDF…")
        if not self.kiosk:
            stack.addWidget(plain_label("FILE", "sectionTitle"))
            buttons = QHBoxLayout()
            for button, handler in (
                (self.open_image_button, self.image_requested),
                (self.open_pdf_button, self.pdf_requested),
            ):
                button.setAutoDefault(True)
                button.clicked.connect(handler)
                buttons.addWidget(button)
            buttons.addStretch(1)
            stack.addLayout(buttons)
            stack.addWidget(
                plain_label(
                    "Or drop a PDF, PNG or JPEG anywhere on this screen.", "hint", wrap=True
                )
            )
            stack.addSpacing(8)
        else:
            self.open_image_button.hide()
            self.open_pdf_button.hide()

        stack.addWidget(plain_label("CODE TEXT", "sectionTitle"))
        entry = QHBoxLayout()
        self.code_field = QLineEdit()
        self.code_field.setObjectName("codeField")
        self.code_field.setPlaceholderText("Paste or scan the code text, then press Enter")
        self.code_field.setAccessibleName("Code text")
        self.code_field.setClearButtonEnabled(True)
        self.code_field.setMaxLength(13000)  # the protocol's barcode limit (PROTOCOL §6)
        self.code_field.setAcceptDrops(False)  # a dropped file should reach the screen's drop
        self.code_field.returnPressed.connect(self.submitted)
        self.verify_button = QPushButton("Verify")
        self.verify_button.setObjectName("primary")
        self.verify_button.setAutoDefault(True)
        self.verify_button.clicked.connect(self.submitted)
        entry.addWidget(self.code_field, 1)
        entry.addWidget(self.verify_button)
        stack.addLayout(entry)
        self.notice = plain_label("", "inputNotice", wrap=True)
        self.notice.hide()
        stack.addWidget(self.notice)

        self.sample_buttons: list[QPushButton] = []
        if samples:
            stack.addSpacing(8)
            stack.addWidget(plain_label("TRY A SAMPLE", "sectionTitle"))
            stack.addWidget(
                plain_label(
                    "Demo payslips with invented people. Each one is rendered as a badge and "
                    "read like a photo.",
                    "hint",
                    wrap=True,
                )
            )
            for sample in samples:
                button = QPushButton(sample.label)
                button.setObjectName("sample")
                button.setAutoDefault(True)
                button.setMinimumWidth(0)
                button.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
                button.setToolTip(sample.label)
                button.clicked.connect(
                    lambda _=False, url=sample.scan_url: self.sample_requested.emit(url)
                )
                stack.addWidget(button)
                self.sample_buttons.append(button)
        stack.addStretch(1)
        row.addWidget(scrolling(inputs), 2)  # fits a 1024x600 or 150 % screen
