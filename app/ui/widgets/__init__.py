"""Parts every screen shares: styles and palettes, card and dialog parts, fitting the screen, the
task runner, folders, dropped files and demo samples (inputs.py), the office-down panel. Imports
no screen's room."""
