"""What this computer issued, per issuer: so the same payslip is never issued twice by accident.

A pay run registers every row under a fresh reference, so the service cannot tell that the same
export run into a second output folder is the same pay run again: it would register (and the
office would hand out) a second, equally valid set of payslips (issue 35). The ledger remembers,
for each payslip this app registered, the row's *external id, period and payment date* with the
reference, the output folder and the day; a run that meets one of them again stops before it
registers anything and says when and where they were issued (`AlreadyIssued`). Revoking a
payslip from the app is written here too, and a revoked payslip no longer counts as issued.

No personal data: external ids are the payroll system's employee numbers, periods and dates are
the non-personal part of a record, and references are public on every badge. One file per issuer
(`<app data>/issued/<client id>.jsonl`), JSON Lines appended and fsynced per batch, so it
survives restarts and a crash; a line cut short by one is ignored.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from app.issuer.journal import JournalError
from service.composition.settings import read_settings

if TYPE_CHECKING:
    from app.api.client import ApiClient

__all__ = [
    "AlreadyIssued",
    "Issued",
    "Ledger",
    "LedgerError",
    "PayslipKey",
    "ledger_dir",
    "payslip_key",
    "revoke_issued",
]

PayslipKey = tuple[str, str, str, str]
"""(external id, period start, period end, payment date): one payslip of one employee."""

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def ledger_dir() -> Path:
    """`issued/` in the app's data directory; beside settings.json when PAYSLIP_CONFIG_DIR keeps
    the app in one folder (a portable install, the tests)."""
    override = read_settings().config_dir
    base = override or Path(platformdirs.user_data_dir("payslip-verify", appauthor=False))
    return base / "issued"


def payslip_key(external_id: str, payslip_non_pii: Mapping[str, Any]) -> PayslipKey:
    return (
        external_id,
        str(payslip_non_pii.get("period_start") or ""),
        str(payslip_non_pii.get("period_end") or ""),
        str(payslip_non_pii.get("payment_date") or ""),
    )


def day_words(day: str) -> str:
    """ "2026-11-28" -> "28 Nov 2026" (as given when it is not a date)."""
    try:
        parsed = datetime.date.fromisoformat(day)
    except ValueError:
        return day
    return f"{parsed.day} {parsed:%b %Y}"


@dataclass(frozen=True)
class Issued:
    """One payslip this app registered."""

    external_id: str
    period_start: str
    period_end: str
    payment_date: str
    reference: str
    out_dir: str
    issued_on: str
    """The local day it was registered, ISO (2026-11-28)."""
    revoked_on: str = ""

    @property
    def key(self) -> PayslipKey:
        return (self.external_id, self.period_start, self.period_end, self.payment_date)

    @property
    def period_words(self) -> str:
        start = f"{day_words(self.period_start)} to " if self.period_start else "ending "
        return f"{start}{day_words(self.period_end)}, paid {day_words(self.payment_date)}"

    def line(self) -> dict[str, str]:
        return {
            "ext": self.external_id,
            "ps": self.period_start,
            "pe": self.period_end,
            "pd": self.payment_date,
            "ref": self.reference,
            "out": self.out_dir,
            "on": self.issued_on,
        }


def issued(
    external_id: str, payslip_non_pii: Mapping[str, Any], reference: str, out_dir: Path
) -> Issued:
    """The ledger entry for a payslip registered today into `out_dir`."""
    ext, start, end, paid = payslip_key(external_id, payslip_non_pii)
    today = datetime.date.today().isoformat()
    return Issued(ext, start, end, paid, reference, str(out_dir.resolve()), today)


class LedgerError(JournalError):
    """The ledger cannot be read or written: a run cannot tell what was issued before, so it
    does not start (a JournalError: the command line and the pay-run tab say it in one line)."""


class AlreadyIssued(Exception):
    """Rows of this run were issued before (and not revoked): nothing was registered. `matches`
    are (row number, the earlier payslip); `str()` is the plain sentence a person reads."""

    def __init__(self, matches: list[tuple[int, Issued]]) -> None:
        self.matches = matches
        super().__init__(self.words())

    @property
    def earlier(self) -> list[Issued]:
        return [item for _, item in self.matches]

    @property
    def folders(self) -> list[str]:
        return list(dict.fromkeys(item.out_dir for item in self.earlier))

    def words(self) -> str:
        groups: dict[tuple[str, str], int] = {}
        for item in self.earlier:
            where = (item.issued_on, item.out_dir)
            groups[where] = groups.get(where, 0) + 1
        parts = [
            f"{count} of these payslips {'was' if count == 1 else 'were'} issued on "
            f"{day_words(day)} into {folder}"
            for (day, folder), count in groups.items()
        ]
        return "; ".join(parts)


class Ledger:
    """The ledger of one issuer. Reads are cheap (one small file); every write is appended and
    fsynced before it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_issuer(cls, client_id: str, folder: Path | None = None) -> Ledger:
        name = _SAFE.sub("_", client_id).strip("._") or "issuer"
        return cls((folder or ledger_dir()) / f"{name}.jsonl")

    def entries(self) -> list[Issued]:
        """Every payslip recorded, in order, with its revocation day when revoked."""
        found: dict[str, Issued] = {}
        revoked: dict[str, str] = {}
        try:
            text = self.path.read_text("utf-8", errors="replace")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise LedgerError(
                f"the list of payslips issued before ({self.path}) cannot be read: "
                f"{exc.strerror or exc}"
            ) from None
        for line in text.splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash: it was never complete
            if not isinstance(data, dict):
                continue
            if "revoked" in data:
                revoked[str(data["revoked"])] = str(data.get("on", ""))
                continue
            with contextlib.suppress(KeyError):
                item = Issued(
                    str(data["ext"]),
                    str(data["ps"]),
                    str(data["pe"]),
                    str(data["pd"]),
                    str(data["ref"]),
                    str(data["out"]),
                    str(data["on"]),
                )
                found.setdefault(item.reference, item)
        return [
            Issued(**{**vars(item), "revoked_on": revoked[ref]}) if ref in revoked else item
            for ref, item in found.items()
        ]

    def active(self, except_in: Path | None = None) -> dict[PayslipKey, Issued]:
        """Payslips issued and not revoked, by key (the first issue of each), leaving out those
        issued into `except_in`: a run resumed in its own folder is not a second issue."""
        skip = str(except_in.resolve()) if except_in is not None else None
        active: dict[PayslipKey, Issued] = {}
        for item in self.entries():
            if not item.revoked_on and item.out_dir != skip:
                active.setdefault(item.key, item)
        return active

    def record(self, items: Iterable[Issued]) -> None:
        self._append([item.line() for item in items])

    def revoke(self, references: Iterable[str]) -> None:
        today = datetime.date.today().isoformat()
        self._append([{"revoked": ref, "on": today} for ref in references])

    def _append(self, lines: list[dict[str, str]]) -> None:
        if not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = "\n" + data  # a line cut short by a crash stays a line of its own
            view = memoryview(data.encode("utf-8"))
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)


REVOKE_REASON = "issued twice by mistake; revoked from the app"


def revoke_issued(client: ApiClient, ledger: Ledger, items: Iterable[Issued]) -> int:
    """Revoke `items` at the service (a repeat is a no-op there) and write each revocation to
    the ledger as soon as the service confirmed it, so a failure half-way leaves the ledger
    true; the first error propagates. Returns how many were revoked."""
    done = 0
    for item in items:
        client.revoke(item.reference, REVOKE_REASON)
        ledger.revoke([item.reference])
        done += 1
    return done
