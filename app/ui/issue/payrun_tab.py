"""The "Pay run from a file" tab: check a CSV/JSON file, register it, watch it progress.

The work runs in `app.issuer.run` on a worker thread; this tab starts, stops and reports it
and streams the per-row results into a table. The Files panel is `payrun_files`, the bar and
its figures (determinate through every phase: checking, registering, badges, PDFs) are
`payrun_progress`. Stop leaves a resumable run: starting it again with the same output folder
carries on where it stopped, and nothing is registered twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from PySide6.QtCore import QObject, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QBoxLayout,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.api.client import ApiClient
from app.issuer.ledger import AlreadyIssued, Ledger
from app.issuer.messages import describe_error
from app.issuer.progress import PhaseCount, Progress
from app.issuer.row_status import RowStatus
from app.issuer.run.results import MAX_BATCH, RunCancelled, RunInterrupted, RunSettings, RunSummary
from app.issuer.run.rows import PayrunRow, RowProblem
from app.issuer.run.runner import PayRun
from app.issuer.run.source import PayrunSource
from app.shell.context import AppContext
from app.ui.issue.issuer_panel import IssuerPanel
from app.ui.issue.payrun_columns import ExportColumns
from app.ui.issue.payrun_export import ExportColumnsFlow
from app.ui.issue.payrun_files import PayRunFiles
from app.ui.issue.payrun_issued import IssuedBefore, not_revoked, registered
from app.ui.issue.payrun_progress import SCALE, RunProgress, phase_views, snapshot
from app.ui.issue.results import READY, ProblemsFilter, ResultsModel
from app.ui.issue.two_columns import TwoColumns
from app.ui.widgets.staff_style import label, plural, section, set_status
from app.ui.widgets.tasks import TaskRunner

CHECK_REPORT_EVERY = 50
ALREADY_ISSUED: dict[str, Literal["stop", "skip", "again"]] = {"skip": "skip", "again": "again"}


class RunSignals(QObject):
    """Carries a pay run's callbacks from its worker thread to the GUI thread (queued)."""

    progress = Signal(object)
    results = Signal(object)
    checking = Signal(int, object)  # rows checked, estimated total (None when unknown)


@dataclass
class CheckOutcome:
    ready: int
    problems: list[RowProblem]


class PayRunTab(ExportColumnsFlow, QWidget):
    """Signals: `checked(CheckOutcome)`, `run_finished(object)` (a RunSummary or the message),
    `progressed(int)` with the bar's value after every update."""

    checked = Signal(object)
    run_finished = Signal(object)
    progressed = Signal(int)
    columns_ready = Signal(object)  # the chosen file's ExportLook (or the message)
    preview_ready = Signal(object)  # the preview rows (or the message)

    def __init__(self, context: AppContext, tasks: TaskRunner, issuer_panel: IssuerPanel) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.issuer_panel = issuer_panel
        self._cancel: threading.Event | None = None
        self._last_out: Path | None = None
        self._issuer: tuple[ApiClient, Ledger] | None = None
        self.open_folder: Callable[[QUrl], object] = QDesktopServices.openUrl
        """How a folder is shown (the desktop's file manager; tests record the call instead)."""
        self.batch_size = MAX_BATCH
        """Rows registered per request (smaller in tests, so a stop lands between batches)."""
        self._build()

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.setSpacing(12)
        self.files = PayRunFiles(self.context, self)
        # The tab's own names for the panel's widgets (the tests use them).
        self.run_file, self.run_out_dir = self.files.run_file, self.files.run_out_dir
        self.sample_button, self.hint = self.files.sample_button, self.files.hint
        self.top = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self.switch = TwoColumns(self, self.top)
        self.top.setSpacing(12)
        self.top.addWidget(self.files.box, 1)
        layout.addLayout(self.top)

        run, run_layout = section("Run")
        buttons = QHBoxLayout()
        self.run_check_button = QPushButton("Check file")
        self.run_check_button.setToolTip("Checks every row here; nothing is sent.")
        self.run_button = QPushButton("Register pay run")
        self.run_button.setObjectName("primary")
        self.run_stop_button = QPushButton("Stop")
        self.run_stop_button.setEnabled(False)
        self.open_button = QPushButton("Open output folder")
        self.open_button.setEnabled(False)
        buttons.addWidget(self.run_check_button)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.run_stop_button)
        buttons.addStretch(1)
        buttons.addWidget(self.open_button)
        run_layout.addLayout(buttons)
        self.progress = RunProgress(self)
        self.progress.add_to(run_layout)
        self.run_progress, self.rows_label = self.progress.bar, self.progress.rows_label
        self.rate_label = self.progress.rate_label
        self.run_status = label("", "runStatus")
        self.run_status.setObjectName("runStatus")
        run_layout.addWidget(self.run_status)
        run_layout.addStretch(1)
        self.top.addWidget(run, 1)
        self.issued_before = IssuedBefore(self.tasks, lambda url: self.open_folder(url), self)
        self.issued_before.run_requested.connect(self.start_run)
        self.issued_before.revoked.connect(self._revoked)
        layout.addWidget(self.issued_before)

        self.columns = ExportColumns(self)
        layout.addWidget(self.columns.box, 2)
        self._look_timer = QTimer(self)
        self._look_timer.setSingleShot(True)
        self._look_timer.setInterval(250)
        self._look_timer.timeout.connect(self.load_columns)
        self.run_file.textChanged.connect(self.file_chosen)
        self.columns.changed.connect(self.refresh_preview)
        self._preview_generation = 0

        self.rows_head = QWidget()
        table_head = QHBoxLayout(self.rows_head)
        table_head.setContentsMargins(0, 0, 0, 0)
        table_head.addWidget(label("ROWS", "sectionTitle", wrap=False))
        table_head.addStretch(1)
        self.columns_button = QPushButton("Show the export's columns")
        self.columns_button.setObjectName("linkButton")
        self.columns_button.hide()
        self.columns_button.clicked.connect(lambda: self._show_columns(True))
        table_head.addWidget(self.columns_button)
        self.revoke_button = QPushButton("Revoke selected…")
        self.revoke_button.setToolTip("Revokes the selected payslips this app registered.")
        self.revoke_button.setEnabled(False)
        table_head.addWidget(self.revoke_button)
        self.problems_only = QCheckBox("Show problems only")
        table_head.addWidget(self.problems_only)
        layout.addWidget(self.rows_head)
        self.results_model = ResultsModel(self)
        self.results_filter = ProblemsFilter(self)
        self.results_filter.setSourceModel(self.results_model)
        self.results_view = QTableView()
        self.results_view.setObjectName("runResults")
        self.results_view.setAccessibleName("Pay run results")
        self.results_view.setModel(self.results_filter)
        self.results_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.results_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.results_view.verticalHeader().setVisible(False)
        self.results_view.setAlternatingRowColors(True)
        header = self.results_view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        layout.addWidget(self.results_view, 1)

        self.run_signals = RunSignals(self)
        self.run_signals.progress.connect(self._run_progress)
        self.run_signals.results.connect(self._run_results)
        self.run_signals.checking.connect(self._check_progress)
        self.run_check_button.clicked.connect(self.check_run)
        self.run_button.clicked.connect(lambda: self.start_run())
        self.run_stop_button.clicked.connect(self.stop_run)
        self.open_button.clicked.connect(self.open_output_folder)
        self.problems_only.toggled.connect(self._filter_problems)
        self.revoke_button.clicked.connect(self.revoke_selected)
        self.results_view.selectionModel().selectionChanged.connect(self._selection_changed)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        self.switch.resized(event.size().width())
        super().resizeEvent(event)

    def fit_width(self, available: int) -> None:
        """The width the screen's scroll area has (app.ui.main_window._ScreenArea)."""
        self.switch.fit(available)

    # ------------------------------------------------------------------ inputs and table

    def _filter_problems(self, only: bool) -> None:
        self.results_filter.problems_only = only
        self.results_filter.invalidate()

    def _run_paths(self) -> tuple[Path, Path | None, Path | None] | None:
        source, pdf_dir, out_dir = self.files.paths()
        if source is None:
            self._set_run_status("Choose a pay-run file first.", error=True)
            return None
        return source, pdf_dir, out_dir

    # ------------------------------------------------------------------ checking

    def check_run(self) -> None:
        """Check every row locally (nothing is sent) and list the problems."""
        paths = self._run_paths()
        if paths is None:
            return
        source, pdf_dir, _ = paths
        ok, mapping = self._confirmed_mapping()
        if not ok:
            return
        self._show_columns(False)
        self.results_model.clear()
        self._set_running(True, checking=True)
        self._set_run_status("Checking…")
        signals = self.run_signals

        def work() -> CheckOutcome:
            opened = PayrunSource.open(source, mapping)  # its kind decided once
            total = opened.count()
            ready = 0
            problems: list[RowProblem] = []
            chunk: list[tuple[int, str, str, str, str]] = []
            done = 0
            for item in opened.rows(pdf_dir=pdf_dir):
                done += 1
                if isinstance(item, PayrunRow):
                    ready += 1
                    chunk.append((item.number, item.external_id, READY, "", ""))
                else:
                    problems.append(item)
                    reasons = "; ".join(item.reasons)
                    chunk.append((item.number, item.external_id, RowStatus.REJECTED, "", reasons))
                if len(chunk) >= CHECK_REPORT_EVERY:
                    signals.results.emit(chunk)
                    signals.checking.emit(done, total)
                    chunk = []
            signals.results.emit(chunk)
            signals.checking.emit(done, done)
            return CheckOutcome(ready, problems)

        self.tasks.run(work, self._checked, self._run_failed)

    def _checked(self, outcome: CheckOutcome) -> None:
        self._set_running(False)
        self._mapping_proved(outcome.ready)
        self.run_progress.setValue(SCALE)
        bad = len(outcome.problems)
        text = f"{plural(outcome.ready, 'row')} ready, {bad} with problems"
        if bad:
            text += ": they will be skipped. Tick “Show problems only” to see why."
        else:
            text += ". Press “Register pay run” to register them."
        self._set_run_status(text, error=bool(bad))
        self.checked.emit(outcome)

    # ------------------------------------------------------------------ running

    def start_run(self, already_issued: str = "stop") -> None:
        """Register the pay run. Rows issued before (the issuer's ledger) stop it before
        anything is registered unless `already_issued` is "skip" or "again"."""
        paths = self._run_paths()
        if paths is None:
            return
        source, pdf_dir, out_dir = paths
        if out_dir is None:
            self._set_run_status("Choose an output folder.", error=True)
            return
        ok, mapping = self._confirmed_mapping()
        if not ok:
            return
        self._show_columns(False)
        try:
            client, key, scan_base = self.issuer_panel.credentials()
        except ValueError as exc:
            self._set_run_status(str(exc), error=True)
            return
        self.results_model.clear()
        self.issued_before.clear()
        self._cancel = threading.Event()
        self._last_out = out_dir
        ledger = Ledger.for_issuer(client.client_id)
        self._issuer = (client, ledger)
        signals = self.run_signals
        run = PayRun(
            client,
            key,
            scan_base,
            RunSettings(
                source=source,
                out_dir=out_dir,
                pdf_dir=pdf_dir,
                batch_size=self.batch_size,
                mapping=mapping,
                combined_pdf=self.files.combined_pdf(),
                already_issued=ALREADY_ISSUED.get(already_issued, "stop"),
            ),
            on_progress=lambda p: signals.progress.emit(snapshot(p)),
            on_results=lambda rs: signals.results.emit(
                [(r.row, r.external_id, r.status, r.service_reference, r.reason) for r in rs]
            ),
            cancel=self._cancel,
            ledger=ledger,
        )
        self._set_running(True)
        self._set_run_status("Starting…")
        self.tasks.run(run.run, self._run_done, self._run_failed)

    def stop_run(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
            self.run_stop_button.setEnabled(False)
            self._set_run_status("Stopping after the rows in hand… (the run can be resumed)")

    def _set_running(self, running: bool, *, checking: bool = False) -> None:
        self.run_button.setEnabled(not running)
        self.run_check_button.setEnabled(not running)
        self.run_stop_button.setEnabled(running and not checking)
        self.open_button.setEnabled(
            not running and self._last_out is not None and self._last_out.is_dir()
        )
        if running:
            self._ran_since_chosen = True
            self.progress.restart()

    def _check_progress(self, done: int, total: int | None) -> None:
        view = PhaseCount("checking", "Checking rows", done, total)
        self._progressed(
            self.progress.show("checking", [view], 0.0, done, total, finished=done == total)
        )

    def _run_progress(self, progress: Progress) -> None:
        elapsed = float(getattr(progress, "elapsed", 0.0) or 0.0)
        # Rows done: rows whose result is final (in the table and results.csv).
        done, total, finished = progress.rows, progress.total, progress.phase == "done"
        views = phase_views(progress)
        self._progressed(
            self.progress.show(progress.phase, views, elapsed, done, total, finished=finished)
        )

    def _progressed(self, step: str | None) -> None:
        """After the bar moved: the step the run is in goes to the status line."""
        if step is not None:
            self._set_run_status(step)
        self.progressed.emit(self.run_progress.value())

    def _run_results(self, rows: list[tuple[int, str, str, str, str]]) -> None:
        self.results_model.append(rows)
        self.results_view.scrollToBottom()

    def _run_done(self, summary: RunSummary) -> None:
        self._cancel = None
        self._set_running(False)
        p = summary.progress
        self._mapping_proved(p.created + p.duplicate)
        self.run_progress.setValue(SCALE)
        self.progress.left_label.setText("")
        skipped = f", {p.skipped} skipped (issued before)" if p.skipped else ""
        text = (
            f"Done: {p.created} registered, {p.duplicate} already registered, {p.errors} "
            f"refused, {p.rejected} not sent{skipped}. The badges and the results list "
            f"({summary.results_csv.name}) are in the output folder."
        )
        unplaced = [n.removeprefix("combined PDF: ") for n in summary.notes[1:]]
        if unplaced:
            text += " Not stamped: " + "; ".join(unplaced) + "."
        self._set_run_status(text, error=not summary.clean)
        self.run_finished.emit(summary)

    def _run_failed(self, exc: Exception) -> None:
        self._cancel = None
        self._set_running(False)
        self.progress.left_label.setText("")
        resume = (
            "To carry on, press “Register pay run” again with the same output folder; nothing "
            "will be registered twice."
        )
        if isinstance(exc, AlreadyIssued) and self._issuer is not None:
            self.run_progress.setValue(0)
            self.issued_before.show_found(exc, *self._issuer)
            text = "Nothing was registered: these payslips were issued before (see below)."
        elif isinstance(exc, RunCancelled):
            text = f"Stopped after {self.rows_label.text() or 'some rows'}. {resume}"
        elif isinstance(exc, RunInterrupted):
            reason = describe_error(exc).rstrip(".")
            text = f"Stopped: {reason[:1].upper()}{reason[1:]}. {resume}"
        else:
            self.run_progress.setValue(0)
            text = describe_error(exc)
        self._set_run_status(text, error=True)
        self.run_finished.emit(text)

    def _selected(self) -> list[tuple[int, str, str, str, str]]:
        model, table = self.results_view.selectionModel(), self.results_model.rows
        rows = {self.results_filter.mapToSource(i).row() for i in model.selectedRows()}
        return [table[r] for r in sorted(rows) if r < len(table)]

    def _selection_changed(self) -> None:
        """Enabled for a selection holding a registered row (the ledger is read on click)."""
        self.revoke_button.setEnabled(self._issuer is not None and registered(self._selected()))

    def revoke_selected(self) -> None:
        chosen = not_revoked(self._selected(), self._issuer)
        if chosen and self._issuer is not None:
            self.issued_before.confirm_revoke(chosen, self._issuer)
        else:
            self._set_run_status("The selected payslips are revoked already.", error=True)

    def _revoked(self, count: int) -> None:
        self.results_view.clearSelection()
        self._set_run_status(
            f"{plural(count, 'payslip')} revoked: checking them now says NOT VERIFIED. Press "
            "“Register pay run” to issue them again."
        )

    def _set_run_status(self, text: str, *, error: bool = False) -> None:
        set_status(self.run_status, text, error=error)

    def open_output_folder(self) -> None:
        folder = self._last_out
        if folder is not None and folder.is_dir():
            self.open_folder(QUrl.fromLocalFile(str(folder)))

    def shutdown(self) -> None:
        """Stop a running pay run; it stays resumable."""
        if self._cancel is not None:
            self._cancel.set()


__all__ = ["CheckOutcome", "PayRunTab"]
