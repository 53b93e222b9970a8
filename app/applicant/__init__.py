"""The applicant check (PROTOCOL §10): several payslips of one person, one decision.

Qt-free and network-free: :mod:`.documents` turns the app's verification outcomes into typed
documents, :mod:`.rules` checks the set, :mod:`.income` works out what it proves, and
:mod:`.problems` holds every problem's name and plain sentence in one table. The CLI
(:mod:`app.commands.applicant`) and the GUI (:mod:`app.ui.applicant.panel`) both use them.
"""
