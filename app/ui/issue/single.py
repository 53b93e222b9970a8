"""The "One payslip" tab: fill in a payslip, register it, get its badge, stamp a PDF.

Laid out like the verify screen (white panels on the pale backdrop, one blue primary button) and
in words a payroll officer uses: a country rather than a schema id, date pickers, money fields,
"This app makes the badge" rather than "self-managed". From about 1000 px of width the form and
the employee/badge column sit side by side, so the whole payslip is visible without scrolling.

Validation runs locally first; its messages appear under the fields they concern and clear as
the user fixes them. The employee's details are encrypted on this computer and cleared from the
screen after issuing and after a spell without activity. No network or file work runs on the
GUI thread, and no personal data is logged or put into an error message. The Result panel (the
badge, stamping it onto a PDF, saving it) is :mod:`app.ui.issue.badge_result`'s.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QBoxLayout,
    QButtonGroup,
    QHBoxLayout,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from app.issuer.examples import CURRENCY, example_employee, example_payslip
from app.issuer.messages import describe_error, resend_helps
from app.issuer.pii import PiiTextError, format_for_schema
from app.issuer.records import (
    IssuedPayslip,
    PreparedOnce,
    check_payslip,
    issue_service_managed,
    register_prepared,
)
from app.issuer.run.stray_pii import stray_pii
from app.shell.context import AppContext
from app.ui.issue.badge_result import BadgeResult, stamped_pdf_name
from app.ui.issue.employee import PiiForm
from app.ui.issue.form import PayslipForm, ScrollBody
from app.ui.issue.issuer_panel import IssuerPanel
from app.ui.issue.schema_choice import SchemaChoice
from app.ui.issue.two_columns import TWO_COLUMNS_FROM, TwoColumns
from app.ui.widgets.staff_style import label, plural, section, set_status
from app.ui.widgets.tasks import TaskRunner
from service.protocol.schemas import SchemaValidationError

MIN_IDLE_SECONDS = 120

__all__ = ["TWO_COLUMNS_FROM", "SinglePayslipTab", "stamped_pdf_name"]


class _Columns(ScrollBody):
    """The two columns' body. Its least width is one column's: below :data:`TWO_COLUMNS_FROM`
    the columns stack, so the two-column width must not stop the window getting narrower."""

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        hint = super().minimumSizeHint()
        layout = self.layout()
        if layout is None:
            return hint
        margins = layout.contentsMargins()
        widest = max(
            (
                item.minimumSize().width()
                for i in range(layout.count())
                if (item := layout.itemAt(i))
            ),
            default=0,
        )
        return QSize(min(hint.width(), widest + margins.left() + margins.right()), hint.height())


class SinglePayslipTab(QWidget):
    """Signals: `issued(IssuedPayslip)`, `failed(str)` (the shown message), `saved(str)`,
    `cleared()` when the employee's details were wiped from the screen."""

    issued = Signal(object)
    failed = Signal(str)
    saved = Signal(str)
    cleared = Signal()

    def __init__(self, context: AppContext, tasks: TaskRunner, issuer_panel: IssuerPanel) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.issuer_panel = issuer_panel
        self.prepared = PreparedOnce()
        self.payslip_form: PayslipForm | None = None
        self._live = False  # re-check as the user types, once a check has found problems
        self._build()
        self.recheck = QTimer(self)
        self.recheck.setSingleShot(True)
        self.recheck.setInterval(250)
        self.recheck.timeout.connect(self._recheck)
        self.idle = QTimer(self)
        self.idle.setSingleShot(True)
        self.idle.setInterval(max(context.settings.idle_timeout, MIN_IDLE_SECONDS) * 1000)
        self.idle.timeout.connect(self.clear_after_idle)
        self._set_schema(self.schema)

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        # No scroll area of its own: the whole Issue screen scrolls as one (the main window's),
        # so there is one vertical scroll bar, not one inside another. The body asks for its
        # full height, which makes that outer area scroll rather than squeeze the rows.
        body = _Columns()
        self.columns = QBoxLayout(QBoxLayout.Direction.LeftToRight, body)
        self.switch = TwoColumns(self, self.columns)
        self.columns.setContentsMargins(12, 12, 12, 12)
        self.columns.setSpacing(14)
        outer.addWidget(body)

        left = QVBoxLayout()
        self.payslip_box, payslip = section("Payslip")
        self.schema_choice = SchemaChoice(self)
        self.schema_combo, self.more_formats = self.schema_choice.combo, self.schema_choice.more
        payslip.addLayout(self.schema_choice.row)
        payslip.addWidget(
            label(
                "These figures are registered with the verification service, so a front desk "
                "can check them later. * marks what every payslip needs.",
                "hint",
            )
        )
        self.payslip_layout = QVBoxLayout()
        payslip.addLayout(self.payslip_layout)
        left.setSpacing(14)
        left.addWidget(self.payslip_box)
        self.pii_form = PiiForm()
        left.addWidget(self.pii_form)
        left.addStretch(1)

        right = QVBoxLayout()
        right.setSpacing(14)

        badge_box, badge = section("Badge")
        self.self_managed = QRadioButton("This app makes the badge (recommended)")
        self.self_managed.setToolTip(
            "Self-managed: the payslip is encrypted here and registered with this app's own "
            "reference (registerNonPII); the badge is drawn here. Pressing the button again "
            "after a network problem is always safe."
        )
        self.service_managed = QRadioButton("The service makes the badge")
        self.service_managed.setToolTip(
            "Service-managed: the payslip is encrypted here and the service draws the badge "
            "(registerAndBuildBarcode)."
        )
        self.self_managed.setChecked(True)
        self.example_button = QPushButton("Fill with an example")
        self.example_button.setObjectName("sample")
        self.example_button.setToolTip("Invented details, to try issuing in demo mode")
        self.example_button.setVisible(self.context.demo is not None)
        self.mode_group = QButtonGroup(self)
        self.mode_group.addButton(self.self_managed)
        self.mode_group.addButton(self.service_managed)
        badge.addWidget(self.self_managed)
        badge.addWidget(self.service_managed)
        badge.addWidget(self.example_button, 0, Qt.AlignmentFlag.AlignLeft)
        buttons = QHBoxLayout()
        self.check_button = QPushButton("Check")
        self.check_button.setToolTip("Checks the form here; nothing is sent.")
        self.issue_button = QPushButton("Register and make badge")
        self.issue_button.setObjectName("primary")
        buttons.addStretch(1)
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.issue_button)
        badge.addLayout(buttons)
        self.status = label("", "issueStatus")
        self.status.setObjectName("issueStatus")
        badge.addWidget(self.status)
        right.addWidget(badge_box)

        self.result = BadgeResult(self.context, self.tasks, self)
        self.result.message.connect(lambda text, error: self._set_status(text, error=error))
        self.result.saved.connect(self.saved)
        self.result.failed.connect(self.failed)
        # The tab's own names for the panel's widgets (the tests use them).
        self.preview, self.reference_label = self.result.preview, self.result.reference_label
        self.stamp_button, self.save_button = self.result.stamp_button, self.result.save_button
        self.save_png, self.stamp_pdf = self.result.save_png, self.result.stamp_pdf
        right.addWidget(self.result.box)
        right.addStretch(1)

        self.left_column = QWidget()
        self.left_column.setLayout(left)
        self.right_column = QWidget()
        self.right_column.setLayout(right)
        self.columns.addWidget(self.left_column, 5)
        self.columns.addWidget(self.right_column, 3)

        self.schema_choice.changed.connect(self._set_schema)
        self.pii_form.changed.connect(self._changed)
        self.check_button.clicked.connect(self.check)
        self.issue_button.clicked.connect(self.issue)
        self.example_button.clicked.connect(self.fill_with_example)
        self.self_managed.toggled.connect(lambda _=False: self._forget_prepared())
        # No stale badge: a change of issuer retires the badge on show, like the form's.
        for edit in self.issuer_panel.fields.values():
            edit.textChanged.connect(lambda _="": self.result.retire())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        self.switch.resized(event.size().width())
        super().resizeEvent(event)

    def fit_width(self, available: int) -> None:
        """The width the screen's scroll area has (app.ui.main_window._ScreenArea)."""
        self.switch.fit(available)

    @property
    def last(self) -> IssuedPayslip | None:
        """The payslip registered last (its badge is in the Result panel)."""
        return self.result.last

    @property
    def two_columns(self) -> bool:
        return self.switch.side_by_side

    # ------------------------------------------------------------------ the form

    def _set_schema(self, schema: str) -> None:
        if self.payslip_form is not None:
            self.payslip_form.setParent(None)
            # deleteLater, not an immediate delete: this runs inside signal handlers whose
            # senders' events may still be queued for the old form's children (one CI run
            # crashed in Qt here). The event loop deletes it as soon as the handler returns.
            self.payslip_form.deleteLater()
        self.payslip_form = PayslipForm(schema)
        self.payslip_form.changed.connect(self._changed)
        self.payslip_layout.addWidget(self.payslip_form)
        currency = self.payslip_form.editor("currency")
        if currency is not None:
            currency.set_text(CURRENCY[schema.split(".")[0]])
        self.pii_form.set_format(format_for_schema(schema))
        self._forget_prepared()
        self.result.retire()  # a badge of another country's payslip must not stay live
        self._live = False
        self.status.setText("")

    @property
    def schema(self) -> str:
        return self.schema_choice.schema

    def set_schema(self, schema: str) -> None:
        self.schema_choice.set_schema(schema)

    def _forget_prepared(self) -> None:
        self.prepared.forget()

    def _changed(self) -> None:
        self._forget_prepared()
        self.result.retire()  # the badge on show is the previous payslip's now
        if self._live:
            self.recheck.start()
        if self.pii_form.has_input():
            self.idle.start()

    def _recheck(self) -> None:
        if self._live and self._gather() is not None:
            self._live = False
            self._set_status("Everything looks right now. Nothing has been sent yet.")

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
            self._live = True
            text = f"{plural(len(errors), 'field')} need{'s' if len(errors) == 1 else ''} "
            text += "attention (see the messages in red)."
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

    def fill_example(self, payslip: dict[str, Any], pii: dict[str, str]) -> None:
        """Fill the form (the example button and tests)."""
        assert self.payslip_form is not None
        self.payslip_form.fill(payslip)
        self.pii_form.fill(pii)

    def fill_with_example(self) -> None:
        """Demo mode: an invented payslip and employee for the chosen country."""
        self.fill_example(example_payslip(self.schema), example_employee(self.schema))
        self._set_status("Example filled in (invented details). Press “Register and make badge”.")

    # ------------------------------------------------------------------ issuing

    def issue(self) -> None:
        gathered = self._gather()
        if gathered is None:
            self.failed.emit(self.status.text())
            return
        payslip, pii_text = gathered
        try:
            client, key, scan_base = self.issuer_panel.credentials()
        except ValueError as exc:
            self._set_status(str(exc) or describe_error(exc), error=True)
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
        self.pii_form.clear_values()  # the badge carries them now; the screen need not
        self.result.show_badge(result)  # after clearing: that change must not retire it
        state = "Registered" if result.created else "Already registered (no second record made)"
        self.idle.stop()
        self._set_status(
            f"{state}. The employee's details were cleared from the screen. Now stamp the badge "
            "onto the payslip PDF, or save it as a picture."
        )
        self.stamp_button.setFocus()
        self.issued.emit(result)

    def _issue_failed(self, exc: Exception) -> None:
        self.issue_button.setEnabled(True)
        if isinstance(exc, SchemaValidationError) and self.payslip_form is not None:
            self.payslip_form.show_errors(
                {fe.path.removeprefix("payslip_non_pii."): fe.message for fe in exc.field_errors}
            )
        text = describe_error(exc)
        if self.prepared.pending and self.self_managed.isChecked() and resend_helps(exc):
            text += " Pressing the button again resends the same payslip safely."
        self._set_status(text, error=True)
        self.failed.emit(text)

    def _set_status(self, text: str, *, error: bool = False) -> None:
        set_status(self.status, text, error=error)

    def clear_after_idle(self) -> None:
        """Wipe the employee's details after a spell without activity (someone walked away)."""
        if not self.pii_form.has_input():
            return
        self.pii_form.clear_values()
        self.prepared.forget()
        minutes = max(1, round(self.idle.interval() / 60000))
        self._set_status(
            f"The employee's details were cleared after {plural(minutes, 'minute')} without "
            "activity, to keep them private."
        )
        self.cleared.emit()
