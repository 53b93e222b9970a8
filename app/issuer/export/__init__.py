"""Pay runs from a payroll system's own export (PROTOCOL §12).

Payroll staff press "Export" in their payroll system and get a CSV or XLSX with that system's
headers, day-first dates and amounts such as `$3,846.15`, and often one PDF holding every
employee's payslip. This package turns those, as they are, into the neutral rows today's pay-run
pipeline checks and issues (`app.issuer.run.rows.RowInput`), so journal and resume, batches,
progress, stray-PII checks and the PII-free results.csv work unchanged:

* `formats` opens the table: CSV (encoding and delimiter sniffed) or XLSX (streamed);
* `mapping` is the MAPPING.json (export header -> target) and the unknown-header check;
* `cells` converts one cell (dates, Excel date cells, money) to the text today's layout reads;
* `reader` joins them into `RowInput`s;
* `suggest` guesses a mapping from the headers;
* `combined_pdf` assigns the pages of one combined PDF to rows and splits it.
"""
