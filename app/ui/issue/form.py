"""The schema-to-form generator: one payslip schema's fields as inputs, with inline errors.

The form is generated from the chosen schema's pydantic model (the one the service validates
with, read through `app.issuer.fields`), so required fields, choices and conditional fields (an
allowance's type exists only for allowances) always match the service. Amounts are typed as
money and sent as integer cents (v1) or decimal strings (v2). How a single field is typed in is
:mod:`app.ui.issue.field_editor`'s; this module lays the fields out, nests objects and lists, and
turns what is typed in back into wire values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.issuer.fields import FieldSpec, FormValues, ValueProblem, read_value, schema_fields
from app.ui.issue.field_editor import FieldEditor

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


class _Group(QGroupBox):
    """A titled box for one nested field of the schema; `path` is its place in the payslip."""

    changed = Signal()

    def __init__(self, spec: FieldSpec, path: str) -> None:
        super().__init__(spec.label)
        self.setObjectName(f"group:{path}")
        self.spec = spec
        self.path = path


class ObjectGroup(_Group):
    """An optional nested object (`hourly`, `ytd`, `kiwisaver`): sent only when filled in."""

    def __init__(self, spec: FieldSpec, path: str) -> None:
        super().__init__(spec, path)
        layout = QVBoxLayout(self)
        self.body = ObjectForm(spec.children, f"{path}.")
        self.body.changed.connect(self.changed.emit)
        layout.addWidget(self.body)

    def collect(self, values: FormValues, problems: dict[str, str], *, money: bool) -> None:
        if self.body.has_input():
            self.body.collect(values, problems, money=money)

    def all_editors(self) -> list[FieldEditor]:
        return self.body.all_editors()


class ArrayGroup(_Group):
    """A list of items (earnings, deductions) with Add and Remove buttons."""

    def __init__(self, spec: FieldSpec, path: str) -> None:
        super().__init__(spec, path)
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
        self.more_text = (
            "More details (earnings, super, year to date …)"
            if schema.startswith("au.")
            else "More details (earnings, KiwiSaver, leave …)"
        )
        self.more_button.setText(f"▸ {self.more_text}")
        self.more_button.setCheckable(True)
        self.more_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.more_button.setObjectName("disclosure")
        layout.addWidget(self.more_button)
        self.optional = ObjectForm(specs, "", only=lambda s: not s.required)
        self.optional.changed.connect(self.changed.emit)
        self.optional.hide()
        layout.addWidget(self.optional)
        self.more_button.toggled.connect(self._toggle)

    def _toggle(self, shown: bool) -> None:
        self.optional.setVisible(shown)
        arrow = "▾" if shown else "▸"
        self.more_button.setText(f"{arrow} {self.more_text}")

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
