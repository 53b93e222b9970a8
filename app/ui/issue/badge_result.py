"""The "One payslip" tab's Result panel: the badge just made, and what to do with it.

Once a payslip is registered the badge is shown with its payslip reference, and the officer
stamps it onto the payslip PDF (page and corner chosen here), saves it as a picture, or copies
its text for a payroll system that prints it. The buttons stay disabled until there is a badge.
Files are read and written off the GUI thread, and written whole or not at all (temp file and
rename), so a full disk or a crash never leaves half a stamped payslip behind.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication, QPixmap
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSpinBox, QWidget

from app.issuer.messages import describe_error
from app.issuer.records import IssuedPayslip
from app.output.files import atomic_write_bytes
from app.shell.context import AppContext
from app.ui.issue.field_editor import compact_combo
from app.ui.widgets.folders import open_file, save_file
from app.ui.widgets.staff_style import label, section
from app.ui.widgets.tasks import TaskRunner
from service.documents.pdf_stamp import CORNERS, stamp_badge

STAMP_SUFFIX = "-badge"
_EMPTY_PREVIEW = "border:1px dashed #aab4c0;border-radius:8px;color:#5b6675;"


def stamped_pdf_name(source: Path) -> Path:
    """`payslip.pdf` -> `payslip-badge.pdf`: the original name with a neutral suffix (a name such
    as "-verified" would claim something the file itself cannot prove)."""
    return source.with_name(f"{source.stem}{STAMP_SUFFIX}.pdf")


class BadgeResult(QObject):
    """The Result panel (``box``) and its badge outputs.

    Signals: `saved(str)` with a written file's path, `failed(str)` with the shown message,
    `message(str, bool)` with a status line for the tab and whether it is an error.
    """

    saved = Signal(str)
    failed = Signal(str)
    message = Signal(str, bool)

    def __init__(self, context: AppContext, tasks: TaskRunner, parent: QWidget) -> None:
        super().__init__(parent)
        self.context = context
        self.tasks = tasks
        self.dialog_parent = parent
        self.last: IssuedPayslip | None = None
        """The badge on show, while it still belongs to the payslip in the form."""
        self.retired_reference = ""
        """The reference of the badge retired last (shown as "previous payslip")."""
        self.box, result = section("Result")
        self.box.setAccessibleName("Issued badge")
        self.preview = QLabel("The badge appears here once the payslip is registered.")
        self.preview.setObjectName("badgePreview")
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setMinimumSize(220, 220)
        self.preview.setStyleSheet(_EMPTY_PREVIEW)
        self.preview.setWordWrap(True)
        result.addWidget(self.preview)
        self.reference_label = label("", "referenceLabel")
        self.reference_label.setObjectName("referenceLabel")
        self.reference_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        result.addWidget(self.reference_label)
        place = QHBoxLayout()
        place.addWidget(label("Stamp on page", "fieldLabel", wrap=False))
        self.page_spin = QSpinBox()
        self.page_spin.setRange(1, 9999)
        self.page_spin.setMaximumWidth(90)
        place.addWidget(self.page_spin)
        place.addWidget(label("in the", "fieldLabel", wrap=False))
        self.corner_combo = QComboBox()
        for corner in CORNERS:
            self.corner_combo.addItem(corner.replace("-", " "), corner)
        self.corner_combo.setCurrentIndex(max(self.corner_combo.findData("top-right"), 0))
        compact_combo(self.corner_combo)
        place.addWidget(self.corner_combo)
        place.addWidget(label("corner", "fieldLabel", wrap=False))
        place.addStretch(1)
        result.addLayout(place)
        self.stamp_button = QPushButton("Stamp onto the payslip PDF…")
        self.stamp_button.setObjectName("primary")
        result.addWidget(self.stamp_button)
        actions = QHBoxLayout()
        self.save_button = QPushButton("Save badge as a picture…")
        self.copy_button = QPushButton("Copy badge text")
        self.copy_button.setObjectName("linkButton")
        self.copy_button.setToolTip("The text inside the badge (for systems that print it)")
        actions.addWidget(self.save_button)
        actions.addStretch(1)
        actions.addWidget(self.copy_button)
        result.addLayout(actions)
        for button in (self.save_button, self.stamp_button, self.copy_button):
            button.setEnabled(False)
        self.save_button.clicked.connect(self._save_dialog)
        self.stamp_button.clicked.connect(self._stamp_dialog)
        self.copy_button.clicked.connect(self._copy_payload)

    def show_badge(self, result: IssuedPayslip) -> None:
        """Show a registered payslip's badge and reference, and offer its outputs."""
        self.last = result
        self.retired_reference = ""
        pixmap = QPixmap()
        pixmap.loadFromData(result.badge_png, "PNG")
        self.preview.setStyleSheet("border:1px solid #d5dbe3;border-radius:8px;background:white;")
        self.preview.setPixmap(
            pixmap.scaled(
                260,
                260,
                Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation,
            )
        )
        who = "this app" if result.managed_by == "issuer" else "the service"
        self.reference_label.setText(
            f"Payslip reference <b>{result.service_reference}</b> · badge made by {who}"
        )
        for button in (self.save_button, self.stamp_button, self.copy_button):
            button.setEnabled(True)

    def retire(self) -> None:
        """The form, the country or the issuer changed: the badge on show belongs to the
        previous payslip. It is dimmed and marked so, and nothing can be stamped, saved or
        copied from it any more (a clerk working through a queue must never put employee A's
        badge on employee B's PDF)."""
        result = self.last
        if result is None:
            return
        self.last = None
        self.retired_reference = result.service_reference
        self.preview.clear()
        self.preview.setStyleSheet(_EMPTY_PREVIEW)
        self.preview.setText("The badge for this payslip appears here once it is registered.")
        self.reference_label.setText(
            f"Previous payslip, ref {result.service_reference}: already registered. "
            "Stamping is off because the form has changed since."
        )
        for button in (self.save_button, self.stamp_button, self.copy_button):
            button.setEnabled(False)
        # The tab's status line still told the clerk to stamp that badge: not any more.
        self.message.emit(
            f"Payslip {result.service_reference} is registered. Its badge is put away because "
            "the form changed; press “Register and make badge” for this one.",
            False,
        )

    def save_png(self, path: Path) -> None:
        """Write the last badge to `path` (temp file + rename), off the GUI thread."""
        result = self.last
        if result is None:
            return
        png = result.badge_png

        def work() -> None:
            atomic_write_bytes(path, png)

        def done(_: object) -> None:
            self._saved(path, "Badge saved")

        self.tasks.run(work, done, self._output_failed)

    def stamp_pdf(self, source: Path, target: Path, page: int, corner: str) -> None:
        """Stamp the last badge onto page `page` (1-based) of `source`; write `target`."""
        result = self.last
        if result is None:
            return
        png, payload = result.badge_png, result.payload

        def work() -> None:
            original = source.read_bytes()
            stamped = stamp_badge(original, png, payload, page - 1, corner)
            atomic_write_bytes(target, stamped)

        def done(_: object) -> None:
            self._saved(target, "Stamped payslip saved")

        self.tasks.run(work, done, self._output_failed)

    def _saved(self, path: Path, what: str) -> None:
        self.message.emit(f"{what} as {path.name} in {path.parent}", False)
        self.saved.emit(str(path))

    def _output_failed(self, exc: Exception) -> None:
        if isinstance(exc, IndexError):
            text = "That PDF has no such page."
        elif isinstance(exc, OSError):
            text = f"The file could not be read or written ({exc.strerror or 'error'})."
        elif type(exc).__module__.startswith(("app.", "service.")):
            text = describe_error(exc) if not str(exc) else str(exc)
            text = text[0].upper() + text[1:] if text else text
        else:
            text = "The PDF could not be stamped; is it a damaged or protected file?"
        self.message.emit(text, True)
        self.failed.emit(text)

    def _save_dialog(self) -> None:
        if self.last is None:
            return
        name = save_file(
            self.dialog_parent,
            self.context.settings,
            "badges",
            "Save badge",
            f"badge-{self.last.service_reference}.png",
            "PNG image (*.png)",
        )
        if name:
            self.save_png(Path(name))

    def _stamp_dialog(self) -> None:
        settings, parent = self.context.settings, self.dialog_parent
        source = open_file(
            parent, settings, "payslip PDFs", "Choose the payslip PDF", "PDF (*.pdf)"
        )
        if not source:
            return
        default = str(stamped_pdf_name(Path(source)))
        target = save_file(
            parent, settings, "stamped PDFs", "Save the stamped payslip", default, "PDF (*.pdf)"
        )
        if target:
            self.stamp_pdf(
                Path(source),
                Path(target),
                self.page_spin.value(),
                str(self.corner_combo.currentData()),
            )

    def _copy_payload(self) -> None:
        if self.last is not None:
            QGuiApplication.clipboard().setText(self.last.payload)
            self.message.emit("Badge text copied.", False)
