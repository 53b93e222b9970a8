"""One verification at a time, off the GUI thread, and never a stale or a late result.

The verify screen hands over either a payslip code it already classified (typed, pasted, scanned
or seen by the camera: :class:`~app.inputs.classify.PayslipCode`), which goes straight to the
service in one task, or a *reader* (a callable that turns a file or a sample into an
:class:`~app.inputs.reading.InputReading`), which is read in one task and, when it holds a code,
verified in a second (:mod:`app.verify.flow`, shared with the CLI); a PDF or page image whose
code verified is then compared with the registered payslip in a third (PROTOCOL §13). All run on
the :class:`TaskRunner`. Each request carries a generation number; anything that moves the
operator on (Next, Esc, a refusal, a newer input) bumps it, so an answer that arrives
afterwards is dropped instead of popping up over the next person.

Fail fast: a verification that gets no answer ends in CANNOT VERIFY within :data:`WATCHDOG_MS`
(past the API client's own deadline, :data:`~app.shell.context.VERIFY_DEADLINE`), whatever the
worker
thread is still doing. Only outcome states, error codes and request ids are logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from app.api.errors import ClientCode
from app.inputs.classify import PayslipCode
from app.inputs.reading import InputError, InputReading
from app.shell.context import VERIFY_DEADLINE, AppContext
from app.ui.widgets.tasks import TaskRunner
from app.verify.flow import (
    Attempt,
    Outcome,
    Verifier,
    found_codes,
    needs_document_check,
    verify_code,
    verify_codes,
    with_document_check,
)
from app.verify.verdicts import InputProblem

log = logging.getLogger("app.verify")

SLOW_MS = 1500
"""After this long without an answer the card says the service is slow."""
WATCHDOG_MS = round(VERIFY_DEADLINE * 1000) + 700
"""The latest a verification may end: past it the card says CANNOT VERIFY whatever the worker
thread is still doing (its late answer is dropped). Under the 5 s the desk was promised."""

Reader = Callable[[], InputReading]
Given = Reader | PayslipCode
"""What the screen hands over: a reader of a file or sample, or a classified code."""


class VerifyPipeline(QObject):
    """Runs one input through reading and verification; says how it ended, once.

    Signals:
        started(): a code is on its way to the service.
        checking_document(): the code verified; its page is being compared with the registered
            payslip (PROTOCOL §13), and the verdict waits for that.
        slow(): no answer after SLOW_MS; the check goes on.
        refused(object, str): no verdict and nothing (more) to send: the Outcome and the
            input's source ("text", "file", "camera", ...).
        answered(object): an Outcome to show (a verdict, or CANNOT VERIFY).
    """

    started = Signal()
    checking_document = Signal()
    slow = Signal()
    refused = Signal(object, str)
    answered = Signal(object)

    def __init__(self, context: AppContext, tasks: TaskRunner, parent: QObject | None = None):
        super().__init__(parent)
        self.context = context
        self.tasks = tasks
        self.last_input: Given | None = None
        """The latest input, for Try again (None once the result is cleared)."""
        self.last_reading: InputReading | None = None
        """What the latest input held (a verification record is recognised from it)."""
        self._generation = 0
        self._pending = False
        self._slow = QTimer(self)
        self._slow.setSingleShot(True)
        self._slow.setInterval(SLOW_MS)
        self._slow.timeout.connect(self._still_waiting)
        self._watchdog = QTimer(self)
        self._watchdog.setSingleShot(True)
        self._watchdog.timeout.connect(self._give_up)

    @property
    def pending(self) -> bool:
        """A check is under way."""
        return self._pending

    def run(self, given: Given, source: str) -> None:
        """Verify a code at once; read anything else off the GUI thread first, then (if it holds
        a payslip code) verify it."""
        self._generation += 1
        generation = self._generation
        self.last_input = given
        self.last_reading = None
        self._pending = True
        self._watchdog.stop()
        if isinstance(given, PayslipCode):
            self._send(generation, source, lambda client: verify_code(client, given))
            return
        self.tasks.run(
            given,
            lambda reading: self._read(generation, source, reading),
            lambda exc: self._failed(generation, source, exc),
        )

    def cancel(self, *, forget: bool = False) -> None:
        """Drop whatever is under way (its answer will be ignored); ``forget`` the input too."""
        self._generation += 1
        self._pending = False
        if forget:
            self.last_input = None
        self._slow.stop()
        self._watchdog.stop()

    def _read(self, generation: int, source: str, reading: InputReading) -> None:
        if generation != self._generation:
            return
        self.last_reading = reading
        found = found_codes(reading.payloads)
        if isinstance(found, Outcome):
            self.refused.emit(found, source)
            return
        self._send(
            generation,
            source,
            lambda client: verify_codes(client, found, reading.disagreement),
            reading,
        )

    def _send(
        self,
        generation: int,
        source: str,
        check: Callable[[Verifier], Outcome],
        reading: InputReading | None = None,
    ) -> None:
        """Ask the service, off the GUI thread, under the slow timer and the watchdog; then
        compare ``reading``'s page(s) with the answer (:meth:`_compare`)."""
        client = self.context.verifier  # read now: a test or a settings change may swap it
        self.started.emit()
        self._slow.start()
        self._watchdog.start(WATCHDOG_MS)
        self.tasks.run(
            lambda: check(client),
            lambda outcome: self._compare(generation, source, outcome, reading),
            lambda exc: self._failed(generation, source, exc),
        )

    def _compare(
        self, generation: int, source: str, outcome: Outcome, reading: InputReading | None
    ) -> None:
        """The service answered: a verified PDF or page image is compared with the registered
        payslip (off the GUI thread, no longer under the service's watchdog: the service has
        answered, and OCR takes its time) before any verdict shows, so the verdict never changes
        behind the operator. Anything else is answered at once."""
        if generation != self._generation:
            return
        if reading is None:
            self._finished(generation, source, outcome)
            return
        if not needs_document_check(outcome, reading):
            self._finished(generation, source, with_document_check(outcome, reading))
            return
        self._slow.stop()
        self._watchdog.stop()
        self.checking_document.emit()
        self.tasks.run(
            lambda: with_document_check(outcome, reading),
            lambda checked: self._finished(generation, source, checked),
            lambda exc: self._failed(generation, source, exc),
        )

    def _still_waiting(self) -> None:
        if self._pending:
            self.slow.emit()

    def _give_up(self) -> None:
        """The watchdog: no answer in time is CANNOT VERIFY; a late answer is dropped."""
        if not self._pending:
            return
        self._generation += 1
        log.info("verify gave up after %d ms", WATCHDOG_MS)
        self._answer(
            Outcome(ClientCode.SERVICE_UNREACHABLE, [Attempt(code=ClientCode.SERVICE_UNREACHABLE)])
        )

    def _finished(self, generation: int, source: str, outcome: Outcome) -> None:
        if generation != self._generation:
            return  # the operator moved on; never show a stale result
        log.info(
            "verify source=%s state=%s code=%s request_id=%s",
            source,
            outcome.state,
            outcome.code or "-",
            outcome.request_id or "-",
        )
        if outcome.verdict is None:
            self.refused.emit(outcome, source)
            return
        self._answer(outcome)

    def _failed(self, generation: int, source: str, exc: Exception) -> None:
        if generation != self._generation:
            return
        if isinstance(exc, InputError):
            log.info("verify source=%s input unreadable", source)
            unreadable = Outcome(
                InputProblem.INPUT_UNREADABLE, detail=f"This file could not be read: {exc}."
            )
            self.refused.emit(unreadable, source)
            return
        log.error("verify source=%s failed: %s", source, type(exc).__name__)
        self._answer(Outcome(ClientCode.API_ERROR))

    def _answer(self, outcome: Outcome) -> None:
        self._pending = False
        self._slow.stop()
        self._watchdog.stop()
        self.answered.emit(outcome)
