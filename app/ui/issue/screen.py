"""The Issue screen: who issues (the issuer panel) over two tabs, one payslip and a pay run.

Issuer secrets stay in memory, or in the SecretStore when the user asks; never in settings.json.
"""

from __future__ import annotations

from PySide6.QtWidgets import QTabWidget, QWidget

from app.shell.context import AppContext
from app.ui.issue.issuer_panel import IssuerPanel
from app.ui.issue.payrun_tab import PayRunTab
from app.ui.issue.single import SinglePayslipTab
from app.ui.widgets.office_down import OfficeDownNotice
from app.ui.widgets.staff_style import staff_screen, titled_column
from app.ui.widgets.tasks import TaskRunner


class IssueScreen(QWidget):
    """`single` issues one payslip; `payrun` runs a file. Their signals are the screen's API."""

    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        staff_screen(self)
        self.context = context
        self.tasks = tasks
        outer = titled_column(self, "Issue payslips", margins=(24, 18, 24, 18), spacing=10)
        self.office_down = OfficeDownNotice(context, tasks)
        self.office_down.restarted.connect(self.service_changed)
        outer.addWidget(self.office_down)
        self.issuer_panel = IssuerPanel(context, tasks)
        outer.addWidget(self.issuer_panel)
        self.single = SinglePayslipTab(context, tasks, self.issuer_panel)
        self.payrun = PayRunTab(context, tasks, self.issuer_panel)
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Issue one payslip or a pay run")
        self.tabs.addTab(self.single, "One payslip")
        self.tabs.addTab(self.payrun, "Pay run from a file")
        outer.addWidget(self.tabs, 1)

    def service_changed(self) -> None:
        """After the embedded service restarted (here or on the Service screen): the notice
        and the issuer's address follow it."""
        self.office_down.refresh()
        self.issuer_panel.follow_service()

    def shutdown(self) -> None:
        """Stop a running pay run (resumable) and close the typed-in issuer's client."""
        self.payrun.shutdown()
        self.issuer_panel.close_client()
