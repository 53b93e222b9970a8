"""Verifying at the desk, Qt-free: the three verdicts, the pipeline from a reading to a verdict,
the words a person reads, and `python -m app verify`."""
