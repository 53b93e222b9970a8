"""The applicant check page (PROTOCOL §10): the panel, its table and verdict views, and its record
button."""
