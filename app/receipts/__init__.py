"""Verification receipts (PROTOCOL §11): checking one and saying what it proves. The printable
records that hold them are drawn with Qt, by the screens (:mod:`app.ui.records.record_pdf`)."""
