"""The pay-run tab's part that deals with a payroll system's export: reading the chosen file's
headers, the columns panel beside the rows table, the preview, and the mapping a check or a run
uses (remembered for the next export with the same headers).

A mixin of `PayRunTab` (it uses the tab's files panel, task runner, status line and signals),
kept apart so the tab's own module stays about running and reporting.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QPushButton, QTableView, QWidget

from app.issuer.export.mapping import ExportMapping, MappingError
from app.issuer.export.memory import remember_mapping
from app.issuer.export.preview import ExportLook, look_at, preview_rows
from app.issuer.messages import describe_error
from app.shell.context import AppContext
from app.ui.issue.payrun_columns import ExportColumns
from app.ui.issue.payrun_files import PayRunFiles
from app.ui.issue.payrun_progress import RunProgress
from app.ui.widgets.tasks import TaskRunner

__all__ = ["ExportColumnsFlow"]


class ExportColumnsFlow:
    """Export handling for `PayRunTab` (see the module docstring)."""

    context: AppContext
    tasks: TaskRunner
    files: PayRunFiles
    columns: ExportColumns
    columns_button: QPushButton
    rows_head: QWidget
    results_view: QTableView
    run_button: QPushButton
    progress: RunProgress
    columns_ready: Any
    preview_ready: Any
    _preview_generation: int
    _look_timer: Any
    _ran_since_chosen = False
    """Whether a check or run began since the file was last chosen (`_set_running(True)`)."""
    _unproved: tuple[list[str], ExportMapping] | None = None
    """The headers and mapping of the check or run under way, remembered once it read a row."""

    def _set_run_status(self, text: str, *, error: bool = False) -> None:
        raise NotImplementedError

    def file_chosen(self) -> None:
        """The pay-run file's name changed: its columns are looked at after a short pause."""
        self._ran_since_chosen = False
        self._look_timer.start()

    def load_columns(self) -> None:
        """Read the chosen file's headers (off the GUI thread) and show its columns."""
        source = self.files.paths()[0]
        if source is None or not source.is_file():
            self.columns.look = None
            self._show_columns(False)
            return
        settings = self.context.settings
        self.tasks.run(lambda: look_at(source, settings), self._looked, self._look_failed)

    def _looked(self, look: ExportLook) -> None:
        if self.files.paths()[0] != look.path:
            return  # another file was chosen meanwhile
        # The last run's figures are not this file's: cleared, unless a check or run of this file
        # began since it was chosen (a quick "Check" keeps its result on screen).
        if self.run_button.isEnabled() and not self._ran_since_chosen:
            self.progress.restart()
            self._set_run_status("")
        self.columns.show_look(look)
        self._show_columns(look.is_export)
        self.columns_ready.emit(look)
        if look.is_export:
            self.refresh_preview()

    def _show_columns(self, shown: bool) -> None:
        """The export's columns, or the rows table: a 768-pixel screen holds one of them (the
        rows table comes back when a check or a run starts)."""
        export = self.columns.look is not None and self.columns.look.is_export
        self.columns.box.setVisible(shown and export)
        self.columns_button.setVisible(export and not shown)
        self.rows_head.setVisible(not (shown and export))
        self.results_view.setVisible(not (shown and export))
        self.files.hint.setVisible(not (shown and export))  # room for the columns

    def _look_failed(self, exc: Exception) -> None:
        self.columns.look = None
        self._show_columns(False)
        self._set_run_status(describe_error(exc), error=True)
        self.columns_ready.emit(describe_error(exc))

    def _export_mapping(self) -> ExportMapping | None:
        """The confirmed mapping for an export (None for our own layout). Raises MappingError
        with the words to show when a column still needs a field."""
        look = self.columns.look
        if look is None or not look.is_export or look.path != self.files.paths()[0]:
            return None
        unplaced = self.columns.unplaced()
        if unplaced:
            raise MappingError(
                "Choose a field (or “Ignore this column”) for: " + ", ".join(unplaced) + "."
            )
        return self.columns.mapping()

    def refresh_preview(self) -> None:
        look = self.columns.look
        if look is None or not look.is_export:
            return
        try:
            mapping = self._export_mapping()
        except MappingError as exc:
            self.columns.show_preview(str(exc))
            self.preview_ready.emit(str(exc))
            return
        assert mapping is not None
        self._preview_generation += 1
        generation, path = self._preview_generation, look.path

        def done(rows: object) -> None:
            if generation == self._preview_generation:
                self.columns.show_preview(rows)  # type: ignore[arg-type]
                self.preview_ready.emit(rows)

        def failed(exc: Exception) -> None:
            if generation == self._preview_generation:
                self.columns.show_preview(describe_error(exc))
                self.preview_ready.emit(describe_error(exc))

        self.tasks.run(lambda: preview_rows(path, mapping), done, failed)

    def _confirmed_mapping(self) -> tuple[bool, ExportMapping | None]:
        """(ok, mapping) for a check or a run; the mapping is remembered for next time once the
        check or run has read a row with it (`_mapping_proved`)."""
        try:
            mapping = self._export_mapping()
        except MappingError as exc:
            self._set_run_status(str(exc), error=True)
            return False, None
        look = self.columns.look
        self._unproved = (look.headers, mapping) if mapping and look is not None else None
        return True, mapping

    def _mapping_proved(self, rows_read: int) -> None:
        """A check or run ended having read `rows_read` rows: remember its mapping only if it
        read any. A mapping that failed every row is no confirmation, and remembered it would
        open the next export straight on the preview, its columns folded away (issue 35)."""
        pending, self._unproved = self._unproved, None
        if pending is not None and rows_read > 0:
            remember_mapping(self.context.settings, *pending)
