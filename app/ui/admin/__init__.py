"""The Admin screen: issuers, verifier clients and keys (overview.py, credentials.py), and pairing
a phone (pair_dialog.py)."""
