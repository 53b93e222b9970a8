"""File dialogs that remember the last folder per purpose ("payslip PDFs", "pay-run files").

A payroll officer stamps twenty PDFs from the same folder; making them browse there twenty times
is the kind of friction that makes people stop using a tool. The folders live in settings.json
(they are not secret); a folder that no longer exists falls back to the home folder.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from app.settings.desk import Settings

SETTINGS_KEY = "folders"


def last_folder(settings: Settings, purpose: str) -> str:
    folders = settings.extra.get(SETTINGS_KEY) if settings.extra else None
    folder = folders.get(purpose) if isinstance(folders, dict) else None
    if isinstance(folder, str) and folder and Path(folder).is_dir():
        return folder
    return str(Path.home())


def remember_folder(settings: Settings, purpose: str, path: str | Path) -> None:
    folder = Path(path)
    folder = folder if folder.is_dir() else folder.parent
    folders = settings.extra.setdefault(SETTINGS_KEY, {})
    if not isinstance(folders, dict):
        folders = settings.extra[SETTINGS_KEY] = {}
    if folders.get(purpose) != str(folder):
        folders[purpose] = str(folder)
        with contextlib.suppress(OSError):  # not remembering a folder is no reason to stop
            settings.save()


def open_file(parent: QWidget, settings: Settings, purpose: str, title: str, kinds: str) -> str:
    name, _ = QFileDialog.getOpenFileName(parent, title, last_folder(settings, purpose), kinds)
    if name:
        remember_folder(settings, purpose, name)
    return name


def save_file(
    parent: QWidget, settings: Settings, purpose: str, title: str, suggested: str, kinds: str
) -> str:
    """`suggested` is a bare file name (put in the remembered folder) or a full path."""
    start = (
        suggested
        if Path(suggested).is_absolute()
        else str(Path(last_folder(settings, purpose)) / suggested)
    )
    name, _ = QFileDialog.getSaveFileName(parent, title, start, kinds)
    if name:
        remember_folder(settings, purpose, name)
    return name


def choose_folder(parent: QWidget, settings: Settings, purpose: str, title: str) -> str:
    name = QFileDialog.getExistingDirectory(parent, title, last_folder(settings, purpose))
    if name:
        remember_folder(settings, purpose, name)
    return name
