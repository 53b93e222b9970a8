"""Verifying at the desk, Qt-free: the three verdicts, the pipeline from a reading to a verdict
and the words a person reads (`python -m app verify` is :mod:`app.commands.verify`)."""
