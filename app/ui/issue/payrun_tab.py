"""The "Pay run from a file" tab: check a CSV/JSON file, register it, watch it progress.

The work runs in `app.issuer.runner` on a worker thread; this tab only shows progress and streams
the per-row results into a table. A stopped run resumes when started again with the same output
folder.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.issuer.messages import describe_error
from app.issuer.payrun import PayrunRow, RowProblem, read_payrun
from app.issuer.runner import PayRun, Progress, RunSettings, RunSummary
from app.ui.issue.form import HINT_STYLE
from app.ui.issue.issuer_panel import IssuerPanel
from app.ui.issue.results import ProblemsFilter, ResultsModel
from app.ui.tasks import TaskRunner


class RunSignals(QObject):
    """Carries a pay run's callbacks from its worker thread to the GUI thread (queued)."""

    progress = Signal(object)
    results = Signal(object)


@dataclass
class CheckOutcome:
    ready: int
    problems: list[RowProblem]


class PayRunTab(QWidget):
    """Signals: `checked(CheckOutcome)`, `run_finished(object)` (a RunSummary or the message)."""

    checked = Signal(object)
    run_finished = Signal(object)

    def __init__(self, context: AppContext, tasks: TaskRunner, issuer_panel: IssuerPanel) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.issuer_panel = issuer_panel
        self._cancel: threading.Event | None = None
        self._build()

    def _build(self) -> None:
        layout = QVBoxLayout(self)
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

        def work() -> CheckOutcome:
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
            return CheckOutcome(ready, problems)

        self.tasks.run(work, self._checked, self._run_failed)

    def _checked(self, outcome: CheckOutcome) -> None:
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
        """Stop a running pay run; it stays resumable."""
        if self._cancel is not None:
            self._cancel.set()


def _copy_progress(progress: Progress) -> Progress:
    """A snapshot: the worker keeps mutating its own Progress while the GUI reads this one."""
    return Progress(**vars(progress))
