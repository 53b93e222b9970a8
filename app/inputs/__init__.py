"""Payloads from files and typed text: PDFs, PNG/JPEG images and raw barcode text (no Qt)."""
