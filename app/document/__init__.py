"""The document check (PROTOCOL §13): does the page a person sees match the registered payslip?

Qt-free, one place for the CLI, the GUI and the applicant check: the field and label table
(fields.py), value parsing and matching (values.py), words grouped into cells and lines
(layout.py), label -> value association and the statuses (compare.py), what a page shows
(pdf_text.py for text PDFs, ocr.py for images and scans) and the check of one input (check.py).
"""
