"""The "One payslip" tab: fill in a payslip, register it, get its badge, stamp a PDF.

Validation runs locally first and its messages appear under the fields they concern. The
employee's data is encrypted on this computer, either for a badge this app makes
(registerNonPII) or one the service makes (registerAndBuildBarcode). No network or file work runs
on the GUI thread, and no personal data is logged or put into an error message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication, QPixmap
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.issuer.badges import CORNERS, stamp_badge
from app.issuer.messages import describe_error
from app.issuer.output import atomic_write_bytes
from app.issuer.payrun import stray_pii
from app.issuer.pii import PiiTextError, format_for_schema
from app.issuer.records import (
    IssuedPayslip,
    PreparedOnce,
    check_payslip,
    issue_service_managed,
    register_prepared,
)
from app.ui.issue.employee import PiiForm
from app.ui.issue.form import PayslipForm, ScrollBody, _compact
from app.ui.issue.issuer_panel import IssuerPanel
from app.ui.tasks import TaskRunner
from service.protocol.schemas import PAYSLIP_SCHEMAS, SchemaValidationError

SCHEMA_LABELS = {
    "au.payslip.v2": "Australia — au.payslip.v2 (decimal amounts)",
    "au.payslip.v1": "Australia — au.payslip.v1 (legacy, whole cents)",
    "nz.payslip.v2": "New Zealand — nz.payslip.v2 (decimal amounts)",
    "nz.payslip.v1": "New Zealand — nz.payslip.v1 (legacy, whole cents)",
}


class SinglePayslipTab(QWidget):
    """Signals: `issued(IssuedPayslip)`, `failed(str)` (the shown message), `saved(str)`."""

    issued = Signal(object)
    failed = Signal(str)
    saved = Signal(str)

    def __init__(self, context: AppContext, tasks: TaskRunner, issuer_panel: IssuerPanel) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.issuer_panel = issuer_panel
        self.last: IssuedPayslip | None = None
        self.prepared = PreparedOnce()
        self._build()
        self._set_schema(self.schema_combo.currentData())

    def _build(self) -> None:
        layout = QHBoxLayout(self)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        layout.addWidget(splitter)

        left = QWidget()
        left_layout = QVBoxLayout(left)
        top = QHBoxLayout()
        top.addWidget(QLabel("Schema"))
        self.schema_combo = QComboBox()
        _compact(self.schema_combo)
        self.schema_combo.setObjectName("schema")
        for schema in PAYSLIP_SCHEMAS:
            self.schema_combo.addItem(SCHEMA_LABELS.get(schema, schema), schema)
        self.schema_combo.setCurrentIndex(self.schema_combo.findData("au.payslip.v2"))
        self.schema_combo.currentIndexChanged.connect(
            lambda _=0: self._set_schema(self.schema_combo.currentData())
        )
        top.addWidget(self.schema_combo, 1)
        left_layout.addLayout(top)

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        body = ScrollBody()
        self.body_layout = QVBoxLayout(body)
        self.payslip_box = QGroupBox("Payslip (sent to the service · * required)")
        self.payslip_layout = QVBoxLayout(self.payslip_box)
        self.payslip_form: PayslipForm | None = None
        self.body_layout.addWidget(self.payslip_box)
        self.pii_form = PiiForm()
        self.pii_form.changed.connect(self._forget_prepared)
        self.body_layout.addWidget(self.pii_form)
        self.body_layout.addStretch(1)
        scroll.setWidget(body)
        left_layout.addWidget(scroll, 1)

        mode_box = QGroupBox("Badge")
        mode_layout = QVBoxLayout(mode_box)
        self.self_managed = QRadioButton("Self-managed: this app makes the badge")
        self.self_managed.setToolTip(
            "Encrypt here, register with your own reference (registerNonPII), render the badge "
            "here. Safe to retry: a resend is a duplicate, never a second record."
        )
        self.service_managed = QRadioButton("Service-managed: the service makes the badge")
        self.service_managed.setToolTip(
            "Encrypt here, send the ciphertext (registerAndBuildBarcode); the service returns "
            "the badge. A retry encrypts afresh."
        )
        self.self_managed.setChecked(True)
        self.mode_group = QButtonGroup(self)
        self.mode_group.addButton(self.self_managed)
        self.mode_group.addButton(self.service_managed)
        mode_layout.addWidget(self.self_managed)
        mode_layout.addWidget(self.service_managed)
        left_layout.addWidget(mode_box)

        buttons = QHBoxLayout()
        self.check_button = QPushButton("Check")
        self.issue_button = QPushButton("Register and make badge")
        self.issue_button.setObjectName("issueButton")
        self.issue_button.setDefault(True)
        self.issue_button.setStyleSheet("font-weight:bold;padding:6px 14px;")
        buttons.addWidget(self.check_button)
        buttons.addStretch(1)
        buttons.addWidget(self.issue_button)
        left_layout.addLayout(buttons)
        self.status = QLabel("")
        self.status.setObjectName("issueStatus")
        self.status.setWordWrap(True)
        left_layout.addWidget(self.status)
        splitter.addWidget(left)

        right = QWidget()
        right_layout = QVBoxLayout(right)
        self.preview = QLabel("The badge appears here once the payslip is registered.")
        self.preview.setObjectName("badgePreview")
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setMinimumSize(260, 260)
        self.preview.setStyleSheet("border:1px dashed #c8c6c4;color:#605e5c;padding:8px;")
        self.preview.setWordWrap(True)
        right_layout.addWidget(self.preview, 1)
        self.reference_label = QLabel("")
        self.reference_label.setObjectName("referenceLabel")
        self.reference_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reference_label.setWordWrap(True)
        right_layout.addWidget(self.reference_label)
        self.save_button = QPushButton("Save badge PNG…")
        self.copy_button = QPushButton("Copy payload text")
        self.stamp_button = QPushButton("Stamp onto payslip PDF…")
        self.page_spin = QSpinBox()
        self.page_spin.setRange(1, 9999)
        self.page_spin.setPrefix("page ")
        self.corner_combo = QComboBox()
        for corner in CORNERS:
            self.corner_combo.addItem(corner.replace("-", " "), corner)
        where = QHBoxLayout()
        where.addWidget(QLabel("Stamp on"))
        where.addWidget(self.page_spin)
        where.addWidget(self.corner_combo, 1)
        right_layout.addWidget(self.save_button)
        right_layout.addLayout(where)
        right_layout.addWidget(self.stamp_button)
        right_layout.addWidget(self.copy_button)
        for button in (self.save_button, self.stamp_button, self.copy_button):
            button.setEnabled(False)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([640, 400])

        self.check_button.clicked.connect(self.check)
        self.issue_button.clicked.connect(self.issue)
        self.save_button.clicked.connect(self._save_dialog)
        self.stamp_button.clicked.connect(self._stamp_dialog)
        self.copy_button.clicked.connect(self._copy_payload)
        self.self_managed.toggled.connect(lambda _=False: self._forget_prepared())

    def _set_schema(self, schema: str) -> None:
        if self.payslip_form is not None:
            self.payslip_form.setParent(None)
            self.payslip_form.deleteLater()
        self.payslip_form = PayslipForm(schema)
        self.payslip_form.changed.connect(self._forget_prepared)
        self.payslip_layout.addWidget(self.payslip_form)
        self.pii_form.set_format(format_for_schema(schema))
        self._forget_prepared()
        self.status.setText("")

    @property
    def schema(self) -> str:
        return str(self.schema_combo.currentData())

    def set_schema(self, schema: str) -> None:
        self.schema_combo.setCurrentIndex(self.schema_combo.findData(schema))

    def _forget_prepared(self) -> None:
        self.prepared.forget()

    def _gather(self) -> tuple[dict[str, Any], str] | None:
        """Validate everything locally; show messages inline. None when something is wrong."""
        form = self.payslip_form
        assert form is not None
        payslip, problems = form.values()
        errors = dict(problems)
        for error in check_payslip(self.schema, payslip):
            path = "" if error.path == "payslip_non_pii" else error.path
            errors.setdefault(path.removeprefix("payslip_non_pii."), error.message)
        for path, message in stray_pii(self.schema, payslip, self.pii_form.fields()).items():
            errors.setdefault(path, message)
        unplaced = form.show_errors(errors)
        pii_text = ""
        try:
            pii_text = self.pii_form.text()
            self.pii_form.set_error("")
        except PiiTextError as exc:
            self.pii_form.set_error(f"{exc.field.replace('_', ' ')}: {exc.problem}")
            errors["pii"] = exc.problem
        if errors:
            count = len(errors)
            text = f"{count} field{'s' if count != 1 else ''} need attention (see the messages)."
            if unplaced:
                text += " " + "; ".join(unplaced)
            self._set_status(text, error=True)
            return None
        return payslip, pii_text

    def check(self) -> bool:
        """Validate locally without sending anything."""
        gathered = self._gather()
        if gathered is not None:
            self._set_status("Everything looks right. Nothing has been sent yet.")
        return gathered is not None

    def issue(self) -> None:
        gathered = self._gather()
        if gathered is None:
            self.failed.emit(self.status.text())
            return
        payslip, pii_text = gathered
        try:
            client, key, scan_base = self.issuer_panel.credentials()
        except ValueError as exc:
            self._set_status(describe_error(exc) if not str(exc) else str(exc), error=True)
            self.failed.emit(self.status.text())
            return
        schema = self.schema
        self.issue_button.setEnabled(False)
        self._set_status("Registering…")
        if self.self_managed.isChecked():
            # Made once and kept until the service answers, so "try again" resends the same
            # reference, IV and tag (a duplicate, never a second record).
            try:
                prepared = self.prepared.get(key, scan_base, schema, payslip, pii_text)
            except (SchemaValidationError, PiiTextError) as exc:
                self._issue_failed(exc)
                return
            self.tasks.run(
                lambda: register_prepared(client, prepared), self._issued, self._issue_failed
            )
        else:
            self.tasks.run(
                lambda: issue_service_managed(client, key, schema, payslip, pii_text),
                self._issued,
                self._issue_failed,
            )

    def _issued(self, result: IssuedPayslip) -> None:
        self.issue_button.setEnabled(True)
        self.prepared.forget()
        self.last = result
        pixmap = QPixmap()
        pixmap.loadFromData(result.badge_png, "PNG")
        self.preview.setStyleSheet("border:1px solid #c8c6c4;background:white;")
        self.preview.setPixmap(
            pixmap.scaled(
                320,
                320,
                Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation,
            )
        )
        how = "made here" if result.managed_by == "issuer" else "made by the service"
        state = "Registered" if result.created else "Already registered (no new record)"
        self.reference_label.setText(f"Reference {result.service_reference} · badge {how}")
        self._set_status(f"{state}. Save the badge or stamp it onto the payslip PDF.")
        for button in (self.save_button, self.stamp_button, self.copy_button):
            button.setEnabled(True)
        self.issued.emit(result)

    def _issue_failed(self, exc: Exception) -> None:
        self.issue_button.setEnabled(True)
        if isinstance(exc, SchemaValidationError) and self.payslip_form is not None:
            self.payslip_form.show_errors(
                {fe.path.removeprefix("payslip_non_pii."): fe.message for fe in exc.field_errors}
            )
        text = describe_error(exc)
        if self.prepared.pending and self.self_managed.isChecked():
            text += " Pressing the button again resends the same payslip safely."
        self._set_status(text, error=True)
        self.failed.emit(text)

    def _set_status(self, text: str, *, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet("color:#a4262c;" if error else "color:#107c10;")

    def fill_example(self, payslip: dict[str, Any], pii: dict[str, str]) -> None:
        """Fill the form (tests, and a quick start for new users)."""
        assert self.payslip_form is not None
        self.payslip_form.fill(payslip)
        self.pii_form.fill(pii)

    # ------------------------------------------------------------------ badge outputs

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
            self._saved(target, "Stamped PDF saved")

        self.tasks.run(work, done, self._output_failed)

    def _saved(self, path: Path, what: str) -> None:
        self._set_status(f"{what}: {path.name}")
        self.saved.emit(str(path))

    def _output_failed(self, exc: Exception) -> None:
        if isinstance(exc, IndexError):
            text = "That PDF has no such page."
        elif isinstance(exc, OSError):
            text = f"The file could not be read or written ({exc.strerror or 'error'})."
        elif type(exc).__module__.startswith(("app.", "service.")):
            text = describe_error(exc) if not str(exc) else str(exc)
        else:
            text = f"The PDF could not be stamped ({type(exc).__name__})."
        self._set_status(text, error=True)
        self.failed.emit(text)

    def _save_dialog(self) -> None:
        if self.last is None:
            return
        name, _ = QFileDialog.getSaveFileName(
            self, "Save badge", f"badge-{self.last.service_reference}.png", "PNG image (*.png)"
        )
        if name:
            self.save_png(Path(name))

    def _stamp_dialog(self) -> None:
        source, _ = QFileDialog.getOpenFileName(self, "Payslip PDF", "", "PDF (*.pdf)")
        if not source:
            return
        default = str(Path(source).with_name(Path(source).stem + "-verified.pdf"))
        target, _ = QFileDialog.getSaveFileName(self, "Save stamped PDF", default, "PDF (*.pdf)")
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
            self._set_status("Payload text copied.")

    # ------------------------------------------------------------------ pay run
