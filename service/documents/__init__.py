"""Badges, QR symbols and PDFs: the documents both sides draw and read.

Not wire formats (those are `service.protocol`), but shared by the service (registerAndBuildBarcode
renders a badge) and the app (the issuer stamps PDFs, the desk reads them), so both may import it.
"""
