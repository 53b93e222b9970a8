"""The Issue screen, in modules named for what they hold (see screen.py)."""
