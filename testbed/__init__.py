"""Sample data and throwaway servers shared by the tests and the benchmarks.

Sealed payslips and PDFs (`factories`), export files (`export_files`), an applicant's
fortnightly payslips (`applicant_payslips`), OAuth tokens (`oauth`) and a real multi-worker
cluster on PostgreSQL + Redis (`cluster`). Neither `tests/` nor `bench/` owns it, so a benchmark
never imports a test module. Not shipped: `pyproject.toml` packages only `service` and `app`.
"""
