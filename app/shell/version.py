"""The version shown by `--version` and the About box; kept in step with pyproject.toml."""

__version__ = "0.1.0"
