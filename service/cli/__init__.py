"""The headless command line, `python -m service`: argument parsing, one-line operator errors,
and the store migration and pairing commands."""
