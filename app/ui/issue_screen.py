"""The Issue screen: issue one payslip by hand, or a whole pay run from a file.

One payslip: the form is generated from the chosen schema's pydantic model (the one the service
validates with), so required fields, choices and conditional fields (an allowance's type exists
only for allowances) always match the service. Validation runs locally first and its messages
appear under the fields they concern. Amounts are typed as money and sent as integer cents (v1) or
decimal strings (v2). The employee's data is encrypted on this computer, either for a self-managed
badge (registerNonPII, badge rendered here) or a service-managed one (registerAndBuildBarcode).

Pay run: a CSV/JSON file is checked and registered in the background by `app.issuer.runner`; this
screen only shows progress and streams the per-row results into a table.

No network or file work runs on the GUI thread (TaskRunner), and no personal data is logged or put
into an error message. Issuer secrets stay in memory, or in the SecretStore when the user asks.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QGuiApplication, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableView,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.api_client import ApiClient
from app.context import AppContext
from app.issuer.badges import CORNERS, stamp_badge
from app.issuer.fields import (
    FieldSpec,
    FormValues,
    ValueProblem,
    read_value,
    schema_fields,
)
from app.issuer.messages import describe_error
from app.issuer.output import atomic_write_bytes
from app.issuer.payrun import PayrunRow, RowProblem, read_payrun, stray_pii
from app.issuer.pii import (
    PiiTextError,
    au_address,
    au_employer_identity,
    build_pii_text,
    format_for_schema,
    nz_address,
)
from app.issuer.records import (
    IssuedPayslip,
    IssuerKey,
    PreparedPayslip,
    check_payslip,
    issue_service_managed,
    prepare_self_managed,
    register_prepared,
)
from app.issuer.runner import PayRun, Progress, RunSettings, RunSummary
from app.issuer.sealing import decode_key
from app.ui.tasks import TaskRunner
from service.protocol.schemas import PAYSLIP_SCHEMAS, SchemaValidationError

ERROR_STYLE = "color:#a4262c;font-size:11px;"
HINT_STYLE = "color:#605e5c;font-size:11px;"
SCHEMA_LABELS = {
    "au.payslip.v2": "Australia — au.payslip.v2 (decimal amounts)",
    "au.payslip.v1": "Australia — au.payslip.v1 (legacy, whole cents)",
    "nz.payslip.v2": "New Zealand — nz.payslip.v2 (decimal amounts)",
    "nz.payslip.v1": "New Zealand — nz.payslip.v1 (legacy, whole cents)",
}
ARRAY_ITEM_NAMES = {
    "earnings": "earning",
    "deductions": "deduction",
    "salary_sacrifice": "salary sacrifice",
    "superannuation": "super contribution",
}


# --- generated form --------------------------------------------------------------------------


class ScrollBody(QWidget):
    """A scroll area's content that scrolls instead of squeezing its rows: whenever its layout
    changes (an error line appears, an earning is added) its minimum height becomes its
    preferred height, which a QScrollArea with a resizable widget then respects."""

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            layout = self.layout()
            if layout is not None:
                self.setMinimumHeight(layout.sizeHint().height())
        return super().event(event)


class FieldEditor(QWidget):
    """One input with its label text, a hint, and an inline error line under it."""

    changed = Signal()

    def __init__(self, spec: FieldSpec, path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        self.path = path
        self.setObjectName(f"field:{path}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(1)
        self.combo: QComboBox | None = None
        self.edit: QLineEdit | None = None
        if spec.kind == "choice":
            self.combo = QComboBox()
            _compact(self.combo)
            self.combo.addItem("— choose —" if spec.required else "", "")
            for choice in spec.choices:
                self.combo.addItem(choice.replace("_", " "), choice)
            self.combo.currentIndexChanged.connect(lambda _=0: self.changed.emit())
            layout.addWidget(self.combo)
        else:
            self.edit = QLineEdit()
            self.edit.setPlaceholderText(_placeholder(spec))
            if spec.max_length:
                self.edit.setMaxLength(spec.max_length)
            self.edit.textChanged.connect(lambda _="": self.changed.emit())
            layout.addWidget(self.edit)
        self.error = QLabel("")
        self.error.setObjectName(f"error:{path}")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        layout.addWidget(self.error)

    @property
    def label_text(self) -> str:
        text = self.spec.label
        if self.spec.kind == "cents":
            text += " ($)"
        return text + (" *" if self.spec.required else "")

    def text(self) -> str:
        if self.combo is not None:
            return str(self.combo.currentData() or "")
        assert self.edit is not None
        return self.edit.text()

    def set_text(self, value: str) -> None:
        if self.combo is not None:
            index = self.combo.findData(value)
            self.combo.setCurrentIndex(max(index, 0))
        else:
            assert self.edit is not None
            self.edit.setText(value)

    def set_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(bool(message))
        widget = self.combo or self.edit
        assert widget is not None
        widget.setStyleSheet("border:1px solid #a4262c;" if message else "")


def _compact(combo: QComboBox) -> None:
    """Let a combo box be narrower than its longest choice, so the form never scrolls sideways."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(8)


def _placeholder(spec: FieldSpec) -> str:
    if spec.kind == "date":
        return "YYYY-MM-DD"
    if spec.kind == "cents" or spec.is_money:
        return "0.00"
    if spec.kind in ("quantity", "decimal"):
        return "e.g. 38"
    if spec.kind == "integer":
        return "whole number"
    return ""


class ObjectForm(QWidget):
    """The fields of one object (the payslip, `hourly`, one earning): a form plus sub-groups.

    Conditional fields (`conditions`) are shown only while their selectors hold, and are left
    out of the values when hidden, so the form cannot send a field the schema refuses there.
    """

    changed = Signal()

    def __init__(
        self,
        specs: tuple[FieldSpec, ...],
        prefix: str,
        *,
        only: Callable[[FieldSpec], bool] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.prefix = prefix
        self.editors: dict[str, FieldEditor] = {}
        self.groups: list[ObjectGroup | ArrayGroup] = []
        self._rows: dict[str, tuple[QLabel, FieldEditor]] = {}
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.form = QFormLayout()
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        outer.addLayout(self.form)
        for spec in specs:
            if only is not None and not only(spec):
                continue
            path = f"{prefix}{spec.name}"
            if spec.kind == "object":
                group = ObjectGroup(spec, path)
                group.changed.connect(self.changed.emit)
                self.groups.append(group)
                outer.addWidget(group)
            elif spec.kind == "array":
                array = ArrayGroup(spec, path)
                array.changed.connect(self.changed.emit)
                self.groups.append(array)
                outer.addWidget(array)
            else:
                editor = FieldEditor(spec, path)
                editor.changed.connect(self._on_change)
                label = QLabel(editor.label_text)
                if spec.description:
                    label.setToolTip(spec.description)
                self.form.addRow(label, editor)
                self.editors[spec.name] = editor
                self._rows[spec.name] = (label, editor)
        self._apply_conditions()

    def _on_change(self) -> None:
        self._apply_conditions()
        self.changed.emit()

    def _apply_conditions(self) -> None:
        for label, editor in self._rows.values():
            visible = self._holds(editor.spec)
            label.setVisible(visible)
            editor.setVisible(visible)

    def _holds(self, spec: FieldSpec) -> bool:
        for selector, value in spec.conditions:
            editor = self.editors.get(selector)
            if editor is None or editor.text() != value:
                return False
        return True

    def collect(self, values: FormValues, problems: dict[str, str], *, money: bool) -> None:
        """Put typed-in values into `values`; unreadable ones go to `problems` by path."""
        for editor in self.editors.values():
            if not self._holds(editor.spec):
                continue
            text = editor.text()
            if not text.strip():
                continue
            try:
                values.set(editor.path, read_value(editor.spec, text, money=money))
            except ValueProblem as exc:
                problems[editor.path] = str(exc)
        for group in self.groups:
            group.collect(values, problems, money=money)

    def all_editors(self) -> list[FieldEditor]:
        found = list(self.editors.values())
        for group in self.groups:
            found.extend(group.all_editors())
        return found

    def has_input(self) -> bool:
        return any(e.text().strip() for e in self.all_editors())


class ObjectGroup(QGroupBox):
    """An optional nested object (`hourly`, `ytd`, `kiwisaver`): sent only when filled in."""

    changed = Signal()

    def __init__(self, spec: FieldSpec, path: str) -> None:
        super().__init__(spec.label)
        self.setObjectName(f"group:{path}")
        self.path = path
        layout = QVBoxLayout(self)
        self.body = ObjectForm(spec.children, f"{path}.")
        self.body.changed.connect(self.changed.emit)
        layout.addWidget(self.body)

    def collect(self, values: FormValues, problems: dict[str, str], *, money: bool) -> None:
        if self.body.has_input():
            self.body.collect(values, problems, money=money)

    def all_editors(self) -> list[FieldEditor]:
        return self.body.all_editors()


class ArrayGroup(QGroupBox):
    """A list of items (earnings, deductions) with Add and Remove buttons."""

    changed = Signal()

    def __init__(self, spec: FieldSpec, path: str) -> None:
        super().__init__(spec.label)
        self.setObjectName(f"group:{path}")
        self.spec = spec
        self.path = path
        self.items: list[tuple[QFrame, ObjectForm]] = []
        self.layout_ = QVBoxLayout(self)
        self.add_button = QPushButton(f"Add {ARRAY_ITEM_NAMES.get(spec.name, 'item')}")
        self.add_button.setObjectName(f"add:{path}")
        self.add_button.clicked.connect(lambda: self.add_item())
        self.layout_.addWidget(self.add_button, 0, Qt.AlignmentFlag.AlignLeft)

    def add_item(self) -> ObjectForm:
        index = len(self.items)
        frame = QFrame()
        frame.setFrameShape(QFrame.Shape.StyledPanel)
        box = QVBoxLayout(frame)
        head = QHBoxLayout()
        title = QLabel(f"{ARRAY_ITEM_NAMES.get(self.spec.name, 'item').capitalize()} {index + 1}")
        title.setStyleSheet("font-weight:bold;")
        remove = QToolButton()
        remove.setText("Remove")
        head.addWidget(title)
        head.addStretch(1)
        head.addWidget(remove)
        box.addLayout(head)
        form = ObjectForm(self.spec.children, f"{self.path}.{index}.")
        form.changed.connect(self.changed.emit)
        box.addWidget(form)
        self.items.append((frame, form))
        self.layout_.insertWidget(self.layout_.count() - 1, frame)
        remove.clicked.connect(lambda: self.remove_item(frame))
        self.changed.emit()
        return form

    def remove_item(self, frame: QFrame) -> None:
        kept = [(f, form) for f, form in self.items if f is not frame]
        # Rebuild the remaining items so their paths (earnings.0, earnings.1) stay contiguous.
        saved = [{e.spec.name: e.text() for e in form.all_editors()} for _, form in kept]
        for f, _ in self.items:
            f.setParent(None)
            f.deleteLater()
        self.items = []
        for texts in saved:
            form = self.add_item()
            for editor in form.all_editors():
                editor.set_text(texts.get(editor.spec.name, ""))
        self.changed.emit()

    def collect(self, values: FormValues, problems: dict[str, str], *, money: bool) -> None:
        for _, form in self.items:
            if form.has_input():
                form.collect(values, problems, money=money)

    def all_editors(self) -> list[FieldEditor]:
        found: list[FieldEditor] = []
        for _, form in self.items:
            found.extend(form.all_editors())
        return found


class PayslipForm(QWidget):
    """The whole `payslip_non_pii` form of one schema: required fields first, the rest folded."""

    changed = Signal()

    def __init__(self, schema: str) -> None:
        super().__init__()
        self.schema = schema
        self.money = schema.endswith(".v1")
        specs = schema_fields(schema)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.required = ObjectForm(specs, "", only=lambda s: s.required)
        self.required.changed.connect(self.changed.emit)
        layout.addWidget(self.required)
        self.more_button = QToolButton()
        self.more_button.setObjectName("moreFields")
        self.more_button.setText("▸ Optional details (pay frequency, earnings, super, YTD …)")
        self.more_button.setCheckable(True)
        self.more_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.more_button.setStyleSheet("QToolButton{border:none;color:#0f6cbd;}")
        layout.addWidget(self.more_button)
        self.optional = ObjectForm(specs, "", only=lambda s: not s.required)
        self.optional.changed.connect(self.changed.emit)
        self.optional.hide()
        layout.addWidget(self.optional)
        self.more_button.toggled.connect(self._toggle)

    def _toggle(self, shown: bool) -> None:
        self.optional.setVisible(shown)
        arrow = "▾" if shown else "▸"
        self.more_button.setText(
            f"{arrow} Optional details (pay frequency, earnings, super, YTD …)"
        )

    def editor(self, path: str) -> FieldEditor | None:
        return next((e for e in self.all_editors() if e.path == path), None)

    def all_editors(self) -> list[FieldEditor]:
        return self.required.all_editors() + self.optional.all_editors()

    def values(self) -> tuple[dict[str, Any], dict[str, str]]:
        """(payslip_non_pii, problems by path) from what is typed in."""
        values = FormValues()
        problems: dict[str, str] = {}
        self.required.collect(values, problems, money=self.money)
        self.optional.collect(values, problems, money=self.money)
        return values.compacted(), problems

    def show_errors(self, errors: dict[str, str]) -> list[str]:
        """Put messages under their fields; returns those that belong to no visible field."""
        unplaced: list[str] = []
        editors = {e.path: e for e in self.all_editors()}
        for editor in editors.values():
            editor.set_error(errors.get(editor.path, ""))
        for path, message in errors.items():
            target = editors.get(path)
            if target is None or not target.isVisibleTo(self):
                if target is not None and not self.optional.isVisible():
                    self.more_button.setChecked(True)
                    continue
                unplaced.append(f"{path or 'payslip'}: {message}")
        return unplaced

    def fill(self, payslip: dict[str, Any]) -> None:
        """Fill in from wire values (used by the demo button and tests)."""
        for path, value in _flatten(payslip):
            editor = self.editor(path)
            if editor is None:
                parts = path.split(".")
                if len(parts) >= 3 and parts[1].isdigit():
                    array = self._array(parts[0])
                    while array is not None and len(array.items) <= int(parts[1]):
                        array.add_item()
                    editor = self.editor(path)
            if editor is None:
                continue
            if editor.spec.kind == "cents" and self.money and isinstance(value, int):
                sign = "-" if value < 0 else ""
                editor.set_text(f"{sign}{abs(value) // 100}.{abs(value) % 100:02d}")
            else:
                editor.set_text(str(value))

    def _array(self, name: str) -> ArrayGroup | None:
        for form in (self.required, self.optional):
            for group in form.groups:
                if isinstance(group, ArrayGroup) and group.path == name:
                    return group
        return None


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for key, item in value.items():
            out.extend(_flatten(item, f"{prefix}{key}."))
        return out
    if isinstance(value, list):
        out = []
        for index, item in enumerate(value):
            out.extend(_flatten(item, f"{prefix}{index}."))
        return out
    return [(prefix[:-1], value)]


# --- the employee's data -------------------------------------------------------------------

AU_PII = (
    ("employee_name", "Employee name *"),
    ("position", "Position"),
    ("department", "Department"),
    ("employer_abn", "Employer ABN"),
    ("employer_name", "Employer name"),
    ("bsb", "BSB"),
    ("account_number", "Account number"),
    ("account_name", "Account name"),
    ("line1", "Address line 1"),
    ("line2", "Address line 2"),
    ("suburb", "Suburb"),
    ("state", "State"),
    ("postcode", "Postcode"),
)
NZ_PII = (
    ("employee_name", "Employee name *"),
    ("ird_number", "IRD number"),
    ("position", "Position"),
    ("department", "Department"),
    ("employer_name", "Employer name"),
    ("account_number", "Account number"),
    ("account_name", "Account name"),
    ("line1", "Address line 1"),
    ("line2", "Address line 2"),
    ("suburb", "Suburb"),
    ("city", "City"),
    ("postcode", "Postcode"),
)


class PiiForm(QGroupBox):
    """The employee's details in the format that fits the schema (AU2 or NZ2).

    The address is typed in parts and joined into the protocol's one line; AU2's employer
    identity is the ABN when given, else the employer's name.
    """

    changed = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.format = ""
        self.edits: dict[str, QLineEdit] = {}
        self.error = QLabel("")
        self.error.setObjectName("piiError")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        self.form = QFormLayout(self)

    def set_format(self, prefix: str) -> None:
        if prefix == self.format:
            return
        kept = {name: edit.text() for name, edit in self.edits.items()}
        while self.form.rowCount():
            self.form.removeRow(0)
        self.edits = {}
        self.format = prefix
        self.setTitle(f"Employee ({prefix} · encrypted on this computer)")
        self.setToolTip(
            "These details are encrypted here and travel only inside the badge; the service "
            "never sees them in clear."
        )
        for name, label in AU_PII if prefix == "AU2" else NZ_PII:
            edit = QLineEdit(kept.get(name, ""))
            edit.setObjectName(f"pii:{name}")
            edit.textChanged.connect(lambda _="": self.changed.emit())
            self.form.addRow(label, edit)
            self.edits[name] = edit
        self.error = QLabel("")
        self.error.setObjectName("piiError")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        self.form.addRow(self.error)

    def value(self, name: str) -> str:
        edit = self.edits.get(name)
        return edit.text().strip() if edit is not None else ""

    def fields(self) -> dict[str, str]:
        v = self.value
        if self.format == "AU2":
            return {
                "employee_name": v("employee_name"),
                "position": v("position"),
                "department": v("department"),
                "employer_identity": au_employer_identity(v("employer_abn"), v("employer_name")),
                "bsb": v("bsb"),
                "account_number": v("account_number"),
                "account_name": v("account_name"),
                "address": au_address(
                    v("line1"), v("line2"), v("suburb"), v("state"), v("postcode")
                ),
            }
        return {
            "employee_name": v("employee_name"),
            "ird_number": v("ird_number"),
            "position": v("position"),
            "department": v("department"),
            "employer_name": v("employer_name"),
            "account_number": v("account_number"),
            "account_name": v("account_name"),
            "address": nz_address(v("line1"), v("line2"), v("suburb"), v("city"), v("postcode")),
        }

    def text(self) -> str:
        """The PII plaintext. Raises PiiTextError (field named, value never shown)."""
        fields = self.fields()
        if not fields["employee_name"]:
            raise PiiTextError("employee_name", "is required")
        return build_pii_text(self.format, fields)

    def set_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(bool(message))

    def fill(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            if name in self.edits:
                self.edits[name].setText(value)

    def clear_values(self) -> None:
        for edit in self.edits.values():
            edit.clear()


# --- issuer credentials --------------------------------------------------------------------


class IssuerPanel(QGroupBox):
    """Who issues: the demo issuer when the app runs one, else typed-in credentials.

    The client secret and encryption key are kept in these fields (memory) and, only when
    "Remember" is ticked, in the SecretStore (OS keyring or a 0600 file), never in settings.json.
    """

    def __init__(self, context: AppContext) -> None:
        super().__init__("Issuer")
        self.context = context
        layout = QVBoxLayout(self)
        self._client: ApiClient | None = None
        self._client_key: tuple[str, str, str] | None = None
        if context.issuer is not None:
            info = context.issuer_info
            self.summary = QLabel(
                f"Demo issuer · client {info.get('client_id', '?')} · key version "
                f"{info.get('key_version') or '—'}"
            )
            self.summary.setObjectName("issuerSummary")
            layout.addWidget(self.summary)
            self.fields: dict[str, QLineEdit] = {}
            self.remember: QCheckBox | None = None
            return
        saved = context.settings.extra.get("issuer", {}) if context.settings.extra else {}
        grid = QGridLayout()
        grid.setColumnStretch(1, 3)
        grid.setColumnStretch(3, 2)
        self.fields = {}
        for index, (name, label, secret) in enumerate(
            (
                ("url", "Service URL", False),
                ("client_id", "Client id", False),
                ("client_secret", "Client secret", True),
                ("encryption_key", "Encryption key", True),
                ("key_version", "Key version", False),
            )
        ):
            edit = QLineEdit()
            edit.setObjectName(f"issuer:{name}")
            if secret:
                edit.setEchoMode(QLineEdit.EchoMode.Password)
            row, column = divmod(index, 2)
            grid.addWidget(QLabel(label), row, column * 2)
            grid.addWidget(edit, row, column * 2 + 1)
            self.fields[name] = edit
        self.fields["url"].setText(str(saved.get("url") or context.service_url or ""))
        self.fields["client_id"].setText(str(saved.get("client_id") or ""))
        self.fields["key_version"].setText(str(saved.get("key_version") or ""))
        client_id = self.fields["client_id"].text()
        if client_id:
            self.fields["client_secret"].setText(
                context.secrets.get(f"issuer:{client_id}:secret") or ""
            )
            self.fields["encryption_key"].setText(
                context.secrets.get(f"issuer:{client_id}:key") or ""
            )
        self.remember = QCheckBox("Remember secret and key (OS secret store)")
        grid.addWidget(self.remember, 2, 2, 1, 2)
        layout.addLayout(grid)

    def credentials(self) -> tuple[ApiClient, IssuerKey, str]:
        """(client, key, scan base). Raises ValueError with a plain message when incomplete."""
        context = self.context
        if context.issuer is not None:
            scan_base = context.service.config.scan_base if context.service else context.service_url
            return context.issuer, IssuerKey.from_info(context.issuer_info), scan_base
        url = self.fields["url"].text().strip().rstrip("/")
        client_id = self.fields["client_id"].text().strip()
        secret = self.fields["client_secret"].text().strip()
        key_text = self.fields["encryption_key"].text().strip()
        key_version = self.fields["key_version"].text().strip() or None
        if not (url and client_id and secret and key_text):
            raise ValueError("Fill in the service URL, client id, client secret and key.")
        key = IssuerKey(decode_key(key_text), key_version)
        ident = (url, client_id, secret)
        if self._client is None or self._client_key != ident:
            if self._client is not None:
                self._client.close()
            self._client = ApiClient(url, client_id, secret, issuer_url=url, deadline=30.0)
            self._client_key = ident
        embedded = context.service is not None and context.service.url.rstrip("/") == url
        scan_base = context.service.config.scan_base if embedded and context.service else url
        self._save(url, client_id, secret, key_text, key_version)
        return self._client, key, scan_base

    def _save(
        self, url: str, client_id: str, secret: str, key_text: str, key_version: str | None
    ) -> None:
        settings = self.context.settings
        wanted = {"url": url, "client_id": client_id, "key_version": key_version or ""}
        if settings.extra.get("issuer") != wanted:
            settings.extra["issuer"] = wanted
            with contextlib.suppress(OSError):  # not remembering the URL is no reason to stop
                settings.save()
        if self.remember is not None and self.remember.isChecked():
            self.context.secrets.set(f"issuer:{client_id}:secret", secret)
            self.context.secrets.set(f"issuer:{client_id}:key", key_text)

    def close_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


# --- pay-run results table -----------------------------------------------------------------


class ResultsModel(QAbstractTableModel):
    """Per-row results, appended a batch at a time (a 50,000-row run stays responsive)."""

    HEADERS = ("Row", "External id", "Result", "Reference", "Reason")
    LABELS = {
        "created": "Registered",
        "duplicate": "Already registered",
        "error": "Refused",
        "rejected": "Not sent",
        "ready": "Ready",
    }

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[int, str, str, str, str]] = []

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex | None = None) -> int:  # noqa: N802
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def columnCount(  # noqa: N802
        self, parent: QModelIndex | QPersistentModelIndex | None = None
    ) -> int:
        return len(self.HEADERS)

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            value = row[index.column()]
            if index.column() == 2:
                return self.LABELS.get(str(value), str(value))
            return value
        if role == Qt.ItemDataRole.UserRole:
            return row[2]
        if role == Qt.ItemDataRole.ForegroundRole and index.column() == 2:
            ok = row[2] in ("created", "duplicate", "ready")
            return QColor("#107c10") if ok else QColor("#a4262c")
        return None

    def headerData(  # noqa: N802
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None

    def append(self, rows: list[tuple[int, str, str, str, str]]) -> None:
        if not rows:
            return
        start = len(self.rows)
        self.beginInsertRows(QModelIndex(), start, start + len(rows) - 1)
        self.rows.extend(rows)
        self.endInsertRows()

    def clear(self) -> None:
        self.beginResetModel()
        self.rows = []
        self.endResetModel()


class ProblemsFilter(QSortFilterProxyModel):
    """Shows everything, or only the rows that were not registered."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.problems_only = False

    def filterAcceptsRow(  # noqa: N802
        self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
    ) -> bool:
        if not self.problems_only:
            return True
        model = self.sourceModel()
        assert isinstance(model, ResultsModel)
        return model.rows[source_row][2] not in ("created", "duplicate", "ready")


class RunSignals(QObject):
    """Carries a pay run's callbacks from its worker thread to the GUI thread (queued)."""

    progress = Signal(object)
    results = Signal(object)


@dataclass
class _CheckOutcome:
    ready: int
    problems: list[RowProblem]


# --- the screen ----------------------------------------------------------------------------


class IssueScreen(QWidget):
    """Signals: `issued(IssuedPayslip)`, `failed(str)` (shown message), `run_finished(object)`
    (a RunSummary or the error message), `saved(str)` (the written path)."""

    issued = Signal(object)
    failed = Signal(str)
    run_finished = Signal(object)
    saved = Signal(str)
    checked = Signal(object)

    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.last: IssuedPayslip | None = None
        self._prepared: tuple[str, PreparedPayslip] | None = None
        self._cancel: threading.Event | None = None
        self.show_dialogs = True

        outer = QVBoxLayout(self)
        title = QLabel("Issue payslips")
        title.setStyleSheet("font-size:20px;font-weight:bold;")
        outer.addWidget(title)
        self.issuer_panel = IssuerPanel(context)
        outer.addWidget(self.issuer_panel)
        self.tabs = QTabWidget()
        self.tabs.addTab(self._single_tab(), "One payslip")
        self.tabs.addTab(self._run_tab(), "Pay run from a file")
        outer.addWidget(self.tabs, 1)
        self._set_schema(self.schema_combo.currentData())

    # ------------------------------------------------------------------ one payslip

    def _single_tab(self) -> QWidget:
        tab = QWidget()
        layout = QHBoxLayout(tab)
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
        return tab

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
        self._prepared = None

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
            marker = repr((schema, payslip)) + str(hash(pii_text))
            if self._prepared is None or self._prepared[0] != marker:
                try:
                    prepared = prepare_self_managed(key, scan_base, schema, payslip, pii_text)
                except (SchemaValidationError, PiiTextError) as exc:
                    self._issue_failed(exc)
                    return
                self._prepared = (marker, prepared)
            prepared = self._prepared[1]
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
        self._prepared = None
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
        if self._prepared is not None and self.self_managed.isChecked():
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

    def _run_tab(self) -> QWidget:
        tab = QWidget()
        layout = QVBoxLayout(tab)
        form = QFormLayout()
        self.run_file = QLineEdit()
        self.run_file.setObjectName("runFile")
        self.run_file.setPlaceholderText("a .csv, .json or .jsonl file (see docs/issuer.md)")
        self.run_pdf_dir = QLineEdit()
        self.run_pdf_dir.setPlaceholderText("optional: folder with one payslip PDF per employee")
        self.run_out_dir = QLineEdit()
        self.run_out_dir.setObjectName("runOut")
        self.run_out_dir.setPlaceholderText("badges, stamped PDFs and results.csv go here")
        for label, edit, pick in (
            ("Pay-run file", self.run_file, self._pick_file),
            ("Payslip PDFs", self.run_pdf_dir, lambda: self._pick_dir(self.run_pdf_dir)),
            ("Output folder", self.run_out_dir, lambda: self._pick_dir(self.run_out_dir)),
        ):
            row = QHBoxLayout()
            row.addWidget(edit, 1)
            browse = QPushButton("Browse…")
            browse.clicked.connect(pick)
            row.addWidget(browse)
            form.addRow(label, row)
        layout.addLayout(form)
        hint = QLabel(
            "Every row is checked first; rows with problems are listed and skipped, the rest are "
            "registered in batches of up to 1000. A stopped run resumes safely when started "
            "again with the same output folder."
        )
        hint.setWordWrap(True)
        hint.setStyleSheet(HINT_STYLE)
        layout.addWidget(hint)
        buttons = QHBoxLayout()
        self.run_check_button = QPushButton("Check file")
        self.run_button = QPushButton("Register pay run")
        self.run_button.setObjectName("runButton")
        self.run_button.setStyleSheet("font-weight:bold;padding:6px 14px;")
        self.run_stop_button = QPushButton("Stop")
        self.run_stop_button.setEnabled(False)
        self.problems_only = QCheckBox("Show problems only")
        buttons.addWidget(self.run_check_button)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.run_stop_button)
        buttons.addStretch(1)
        buttons.addWidget(self.problems_only)
        layout.addLayout(buttons)
        self.run_progress = QProgressBar()
        self.run_progress.setObjectName("runProgress")
        self.run_progress.setRange(0, 1)
        self.run_progress.setValue(0)
        layout.addWidget(self.run_progress)
        self.run_status = QLabel("")
        self.run_status.setObjectName("runStatus")
        self.run_status.setWordWrap(True)
        layout.addWidget(self.run_status)
        self.results_model = ResultsModel(self)
        self.results_filter = ProblemsFilter(self)
        self.results_filter.setSourceModel(self.results_model)
        self.results_view = QTableView()
        self.results_view.setObjectName("runResults")
        self.results_view.setModel(self.results_filter)
        self.results_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.results_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.results_view.verticalHeader().setVisible(False)
        header = self.results_view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        layout.addWidget(self.results_view, 1)

        self.run_signals = RunSignals(self)
        self.run_signals.progress.connect(self._run_progress)
        self.run_signals.results.connect(self._run_results)
        self.run_check_button.clicked.connect(self.check_run)
        self.run_button.clicked.connect(self.start_run)
        self.run_stop_button.clicked.connect(self.stop_run)
        self.problems_only.toggled.connect(self._filter_problems)
        return tab

    def _pick_file(self) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self, "Pay-run file", "", "Pay runs (*.csv *.json *.jsonl)"
        )
        if name:
            self.run_file.setText(name)

    def _pick_dir(self, edit: QLineEdit) -> None:
        name = QFileDialog.getExistingDirectory(self, "Choose a folder")
        if name:
            edit.setText(name)

    def _filter_problems(self, only: bool) -> None:
        self.results_filter.problems_only = only
        self.results_filter.invalidate()

    def _run_paths(self) -> tuple[Path, Path | None, Path | None] | None:
        file_text = self.run_file.text().strip()
        if not file_text:
            self._set_run_status("Choose a pay-run file first.", error=True)
            return None
        pdf_text = self.run_pdf_dir.text().strip()
        out_text = self.run_out_dir.text().strip()
        return (
            Path(file_text),
            Path(pdf_text) if pdf_text else None,
            (Path(out_text) if out_text else None),
        )

    def check_run(self) -> None:
        """Check every row locally (nothing is sent) and list the problems."""
        paths = self._run_paths()
        if paths is None:
            return
        source, pdf_dir, _ = paths
        self.results_model.clear()
        self._set_running(True, checking=True)
        self._set_run_status("Checking…")
        signals = self.run_signals

        def work() -> _CheckOutcome:
            ready = 0
            problems: list[RowProblem] = []
            chunk: list[tuple[int, str, str, str, str]] = []
            for item in read_payrun(source, pdf_dir=pdf_dir):
                if isinstance(item, PayrunRow):
                    ready += 1
                    chunk.append((item.number, item.external_id, "ready", "", ""))
                else:
                    problems.append(item)
                    chunk.append(
                        (item.number, item.external_id, "rejected", "", "; ".join(item.reasons))
                    )
                if len(chunk) >= 1000:
                    signals.results.emit(chunk)
                    chunk = []
            signals.results.emit(chunk)
            return _CheckOutcome(ready, problems)

        self.tasks.run(work, self._checked, self._run_failed)

    def _checked(self, outcome: _CheckOutcome) -> None:
        self._set_running(False)
        bad = len(outcome.problems)
        self._set_run_status(
            f"{outcome.ready} rows ready, {bad} with problems"
            + (" (they will be skipped; fix them and run them later)." if bad else "."),
            error=bool(bad),
        )
        self.checked.emit(outcome)

    def start_run(self) -> None:
        paths = self._run_paths()
        if paths is None:
            return
        source, pdf_dir, out_dir = paths
        if out_dir is None:
            self._set_run_status("Choose an output folder.", error=True)
            return
        try:
            client, key, scan_base = self.issuer_panel.credentials()
        except ValueError as exc:
            self._set_run_status(str(exc), error=True)
            return
        self.results_model.clear()
        self._cancel = threading.Event()
        signals = self.run_signals
        run = PayRun(
            client,
            key,
            scan_base,
            RunSettings(source=source, out_dir=out_dir, pdf_dir=pdf_dir),
            on_progress=lambda p: signals.progress.emit(_copy_progress(p)),
            on_results=lambda rs: signals.results.emit(
                [(r.row, r.external_id, r.status, r.service_reference, r.reason) for r in rs]
            ),
            cancel=self._cancel,
        )
        self._set_running(True)
        self._set_run_status("Starting…")
        self.tasks.run(run.run, self._run_done, self._run_failed)

    def stop_run(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
            self._set_run_status("Stopping after the current batch…")

    def _set_running(self, running: bool, *, checking: bool = False) -> None:
        self.run_button.setEnabled(not running)
        self.run_check_button.setEnabled(not running)
        self.run_stop_button.setEnabled(running and not checking)
        if running:
            self.run_progress.setRange(0, 0)  # busy until the first count arrives

    def _run_progress(self, progress: Progress) -> None:
        if progress.total:
            self.run_progress.setRange(0, progress.total)
            self.run_progress.setValue(min(progress.rows, progress.total))
        phase = {"registering": "registering a batch", "writing badges": "writing badges"}.get(
            progress.phase, progress.phase
        )
        self._set_run_status(
            f"{progress.rows} rows handled · {progress.created} registered · "
            f"{progress.duplicate} already registered · {progress.errors} refused · "
            f"{progress.rejected} not sent · {phase}"
        )

    def _run_results(self, rows: list[tuple[int, str, str, str, str]]) -> None:
        self.results_model.append(rows)

    def _run_done(self, summary: RunSummary) -> None:
        self._set_running(False)
        self._cancel = None
        p = summary.progress
        self.run_progress.setRange(0, max(p.rows, 1))
        self.run_progress.setValue(p.rows)
        self._set_run_status(
            f"Done: {p.created} registered, {p.duplicate} already registered, {p.errors} "
            f"refused, {p.rejected} not sent. Badges and {summary.results_csv.name} are in "
            f"{summary.results_csv.parent}.",
            error=not summary.clean,
        )
        self.run_finished.emit(summary)

    def _run_failed(self, exc: Exception) -> None:
        self._set_running(False)
        self._cancel = None
        self.run_progress.setRange(0, 1)
        self.run_progress.setValue(0)
        text = describe_error(exc)
        self._set_run_status(text, error=True)
        self.run_finished.emit(text)

    def _set_run_status(self, text: str, *, error: bool = False) -> None:
        self.run_status.setText(text)
        self.run_status.setStyleSheet("color:#a4262c;" if error else "")

    # ------------------------------------------------------------------ lifecycle

    def shutdown(self) -> None:
        """Stop a running pay run (resumable) and close the typed-in issuer's client."""
        if self._cancel is not None:
            self._cancel.set()
        self.issuer_panel.close_client()


def _copy_progress(progress: Progress) -> Progress:
    """A snapshot: the worker keeps mutating its own Progress while the GUI reads this one."""
    return Progress(**vars(progress))
