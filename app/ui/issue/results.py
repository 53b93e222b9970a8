"""The pay run's per-row results as a Qt table model, appended a batch at a time."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QColor

from app.issuer.row_status import RowStatus

READY = "ready"
"""A checked row not sent yet (before the run): the table's own word beside the run's."""
_FINE = frozenset({RowStatus.CREATED, RowStatus.DUPLICATE, RowStatus.SKIPPED, READY})


class ResultsModel(QAbstractTableModel):
    """Per-row results, appended a batch at a time (a 50,000-row run stays responsive)."""

    HEADERS = ("Row", "External id", "Result", "Reference", "Reason")
    LABELS: dict[str, str] = {
        RowStatus.CREATED: "Registered",
        RowStatus.DUPLICATE: "Already registered",
        RowStatus.ERROR: "Refused",
        RowStatus.REJECTED: "Not sent",
        RowStatus.SKIPPED: "Issued before, skipped",
        READY: "Ready",
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
            ok = row[2] in _FINE
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
        return model.rows[source_row][2] not in _FINE
