"""Verification receipts (PROTOCOL §11): checking one, and the printable records that hold them."""
