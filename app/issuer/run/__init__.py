"""The pay-run engine: a pay-run file in, registered records, badges, PDFs and results.csv out.

Split by concern so each part can be read on its own:

* `source` reads CSV, JSON and JSON Lines row by row; `rows` checks one row (`PayrunRow` or
  `RowProblem`); `stray_pii` flags personal data typed into a non-personal column;
* `results` is the vocabulary callers see (`RunSettings`, `RecordResult`, `RunSummary`, the
  `RunInterrupted` and `RunCancelled` errors);
* `journal_replay` is what the encrypted run journal holds and how a re-run reads it back;
* `reconcile` decides each row against an interrupted run (done, changed, resend, new);
* `outputs` writes a batch's badges and PDFs on worker processes and acknowledges it;
* `runner` (`PayRun`) drives them in the order that makes a run safe to kill at any moment.

This package imports the HTTP client (through `runner`); the worker processes never import it:
they load only `app.output.jobs` and `app.output.files`.
"""
