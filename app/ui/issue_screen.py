"""Kept so `from app.ui.issue_screen import IssueScreen` still works; the screen lives in
`app.ui.issue` (modules named for what they hold)."""

from app.ui.issue.screen import IssueScreen

__all__ = ["IssueScreen"]
