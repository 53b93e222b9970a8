"""The one way code reaches files in the top-level `resources/` folder, from source or frozen.

From source (a checkout or an editable install) the folder sits beside the `app` package, which
`importlib.resources` locates wherever it was imported from. In a PyInstaller bundle the spec
copies the folder to `<sys._MEIPASS>/resources` (the bundle's `_internal` folder). Callers get a
real `Path` because Qt, OpenCV and file dialogs want file names, not readers.
"""

from __future__ import annotations

import importlib.resources
import sys
from pathlib import Path, PurePosixPath

RESOURCE_DIR = "resources"


class ResourceNotFound(FileNotFoundError):
    """A name that is not in the resources folder (a packaging mistake, never user input)."""


def bundle_dir() -> Path | None:
    """PyInstaller's unpack folder when running frozen, else None."""
    meipass = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and meipass:
        return Path(meipass)
    return None


def root() -> Path:
    """The resources folder of this run: the bundle's copy when frozen, else the source tree's."""
    frozen = bundle_dir()
    if frozen is not None:
        return frozen / RESOURCE_DIR
    anchor = importlib.resources.files("app")
    # A regular package on disk: its Traversable is a Path. The folder is its sibling.
    return Path(str(anchor)).resolve().parent / RESOURCE_DIR


def path(name: str) -> Path:
    """The file `name` (a relative, `/`-separated name such as `sample_payrun.csv`)."""
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ResourceNotFound(f"not a resource name: {name!r}")
    found = root().joinpath(*relative.parts)
    if not found.is_file():
        raise ResourceNotFound(f"resource {name!r} is missing from {root()}")
    return found


def read_bytes(name: str) -> bytes:
    return path(name).read_bytes()


def read_text(name: str, encoding: str = "utf-8") -> str:
    return path(name).read_text(encoding)


def names() -> list[str]:
    """Every resource file, as `/`-separated names relative to the folder (sorted)."""
    base = root()
    if not base.is_dir():
        return []
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
