"""Who issues: the demo issuer, an issuer saved on this computer, or typed-in credentials."""

from __future__ import annotations

import contextlib

from PySide6.QtWidgets import QCheckBox, QGridLayout, QGroupBox, QLabel, QLineEdit, QVBoxLayout

from app.api_client import ApiClient
from app.context import AppContext
from app.issuer.records import IssuerKey
from app.issuer.sealing import decode_key


class IssuerPanel(QGroupBox):
    """Who issues: the demo issuer when the app runs one, else typed-in credentials.

    The client secret and encryption key are kept in these fields (memory) and, only when
    "Remember" is ticked, in the SecretStore (OS keyring or a 0600 file), never in settings.json.
    """

    def __init__(self, context: AppContext) -> None:
        super().__init__("Issuer")
        self.context = context
        layout = QVBoxLayout(self)
        self._client: ApiClient | None = None
        self._client_key: tuple[str, str, str] | None = None
        if context.issuer is not None:
            info = context.issuer_info
            self.summary = QLabel(
                f"Demo issuer · client {info.get('client_id', '?')} · key version "
                f"{info.get('key_version') or '—'}"
            )
            self.summary.setObjectName("issuerSummary")
            layout.addWidget(self.summary)
            self.fields: dict[str, QLineEdit] = {}
            self.remember: QCheckBox | None = None
            return
        saved = context.settings.extra.get("issuer", {}) if context.settings.extra else {}
        grid = QGridLayout()
        grid.setColumnStretch(1, 3)
        grid.setColumnStretch(3, 2)
        self.fields = {}
        for index, (name, label, secret) in enumerate(
            (
                ("url", "Service URL", False),
                ("client_id", "Client id", False),
                ("client_secret", "Client secret", True),
                ("encryption_key", "Encryption key", True),
                ("key_version", "Key version", False),
            )
        ):
            edit = QLineEdit()
            edit.setObjectName(f"issuer:{name}")
            if secret:
                edit.setEchoMode(QLineEdit.EchoMode.Password)
            row, column = divmod(index, 2)
            grid.addWidget(QLabel(label), row, column * 2)
            grid.addWidget(edit, row, column * 2 + 1)
            self.fields[name] = edit
        self.fields["url"].setText(str(saved.get("url") or context.service_url or ""))
        self.fields["client_id"].setText(str(saved.get("client_id") or ""))
        self.fields["key_version"].setText(str(saved.get("key_version") or ""))
        client_id = self.fields["client_id"].text()
        if client_id:
            self.fields["client_secret"].setText(
                context.secrets.get(f"issuer:{client_id}:secret") or ""
            )
            self.fields["encryption_key"].setText(
                context.secrets.get(f"issuer:{client_id}:key") or ""
            )
        self.remember = QCheckBox("Remember secret and key (OS secret store)")
        grid.addWidget(self.remember, 2, 2, 1, 2)
        layout.addLayout(grid)

    def credentials(self) -> tuple[ApiClient, IssuerKey, str]:
        """(client, key, scan base). Raises ValueError with a plain message when incomplete."""
        context = self.context
        if context.issuer is not None:
            scan_base = context.service.config.scan_base if context.service else context.service_url
            return context.issuer, IssuerKey.from_info(context.issuer_info), scan_base
        url = self.fields["url"].text().strip().rstrip("/")
        client_id = self.fields["client_id"].text().strip()
        secret = self.fields["client_secret"].text().strip()
        key_text = self.fields["encryption_key"].text().strip()
        key_version = self.fields["key_version"].text().strip() or None
        if not (url and client_id and secret and key_text):
            raise ValueError("Fill in the service URL, client id, client secret and key.")
        key = IssuerKey(decode_key(key_text), key_version)
        ident = (url, client_id, secret)
        if self._client is None or self._client_key != ident:
            if self._client is not None:
                self._client.close()
            self._client = ApiClient(url, client_id, secret, issuer_url=url, deadline=30.0)
            self._client_key = ident
        embedded = context.service is not None and context.service.url.rstrip("/") == url
        scan_base = context.service.config.scan_base if embedded and context.service else url
        self._save(url, client_id, secret, key_text, key_version)
        return self._client, key, scan_base

    def _save(
        self, url: str, client_id: str, secret: str, key_text: str, key_version: str | None
    ) -> None:
        settings = self.context.settings
        wanted = {"url": url, "client_id": client_id, "key_version": key_version or ""}
        if settings.extra.get("issuer") != wanted:
            settings.extra["issuer"] = wanted
            with contextlib.suppress(OSError):  # not remembering the URL is no reason to stop
                settings.save()
        if self.remember is not None and self.remember.isChecked():
            self.context.secrets.set(f"issuer:{client_id}:secret", secret)
            self.context.secrets.set(f"issuer:{client_id}:key", key_text)

    def close_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
