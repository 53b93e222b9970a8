"""The kiosk PIN is stored with scrypt at a cost that makes trying every 4-digit PIN take hours
of CPU (issue 37, point 5); older PBKDF2 hashes still verify and are upgraded on the next right
entry; the lock-out still counts wrong ones."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QDialog

from app.settings.desk import Settings
from app.settings.pin_hash import (
    MAX_N,
    SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
    hash_pin,
    needs_upgrade,
    verify_pin,
)
from app.ui.pin_dialog import MAX_TRIES, PinDialog, PinGuard

pytestmark = pytest.mark.real_pin_cost  # the real scrypt cost, not the other tests' cheaper one


def legacy_hash(pin: str, salt: str = "00112233aabbccdd") -> str:
    """What versions before issue 37 stored: PBKDF2-SHA256, 100,000 rounds."""
    return f"{salt}${hashlib.pbkdf2_hmac('sha256', pin.encode(), salt.encode(), 100_000).hex()}"


def cost(stored: str) -> tuple[int, int, int]:
    match = re.match(r"^scrypt\$n=(\d+),r=(\d+),p=(\d+)\$[0-9a-f]{32}\$[0-9a-f]{64}$", stored)
    assert match is not None, stored
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def test_a_new_pin_is_stored_with_memory_hard_scrypt() -> None:
    settings = Settings()
    settings.set_pin("2468")
    n, r, p = cost(settings.kiosk_pin_hash)
    # 128 MiB per try and about 1 s of one core here (docs/decisions.md, 2026-11-29): 10,000
    # four-digit PINs take hours per core; PBKDF2 before took 26 ms per try (under 5 minutes).
    assert 128 * n * r >= 128 * 2**20
    assert (n, r, p) >= (2**17, 8, 2)
    assert not needs_upgrade(settings.kiosk_pin_hash)
    assert "2468" not in settings.kiosk_pin_hash
    assert settings.check_pin("2468")
    assert not settings.check_pin("2469")


def test_a_damaged_or_hostile_hash_matches_nothing() -> None:
    good = hash_pin("2468")
    greedy = re.sub(r"n=\d+", f"n={MAX_N * 2}", good)  # would ask for 2 GiB: refused unrun
    assert not verify_pin("2468", greedy)
    assert not verify_pin("2468", re.sub(r"n=\d+", "n=3", good))  # not a power of two
    assert not verify_pin("2468", good[:-2])
    assert not verify_pin("2468", "scrypt$garbage")
    assert not verify_pin("2468", "no-separator")


def test_an_old_pbkdf2_pin_verifies_and_is_upgraded_on_the_next_right_entry(
    qtbot: Any, config_dir: Path, no_leaks: None
) -> None:
    Settings(kiosk_pin_hash=legacy_hash("2468")).save()
    settings = Settings.load()
    guard = PinGuard(settings)
    dialog = PinDialog(guard)
    qtbot.addWidget(dialog)
    dialog.field.setText("1357")
    dialog.try_pin()
    assert f"{MAX_TRIES - 1} tries left" in dialog.message.text()
    saved = json.loads((config_dir / "settings.json").read_text("utf-8"))
    assert saved["kiosk_pin_hash"] == legacy_hash("2468")  # a wrong PIN upgrades nothing
    dialog.field.setText("2468")
    dialog.try_pin()
    assert dialog.result() == QDialog.DialogCode.Accepted
    saved = json.loads((config_dir / "settings.json").read_text("utf-8"))
    assert cost(saved["kiosk_pin_hash"]) == (SCRYPT_N, SCRYPT_R, SCRYPT_P)
    reloaded = Settings.load()
    assert reloaded.check_pin("2468") and not reloaded.check_pin("1357")
    assert reloaded.kiosk_pin_hash == saved["kiosk_pin_hash"]  # already current: unchanged


def test_a_weaker_scrypt_hash_is_upgraded_too() -> None:
    salt = bytes(16)
    key = hashlib.scrypt(b"2468", salt=salt, n=2**14, r=8, p=1, dklen=32)
    weak = f"scrypt$n={2**14},r=8,p=1${salt.hex()}${key.hex()}"
    settings = Settings(kiosk_pin_hash=weak)
    assert needs_upgrade(weak)
    assert not settings.check_pin("0000") and settings.kiosk_pin_hash == weak
    assert settings.check_pin("2468") and not needs_upgrade(settings.kiosk_pin_hash)
