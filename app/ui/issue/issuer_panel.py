"""Who issues: the demo issuer, the issuer saved on this computer, or typed-in credentials.

The panel shows the issuer by name; its credentials sit in a collapsed "Details" part, opened
only when none are saved yet or the user wants to change them. The client secret and encryption
key live in these fields (memory) and, only when saved from Admin or "Remember" is ticked, in the
SecretStore (OS keyring or a 0600 file), never in settings.json.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.api import ApiClient
from app.api.fail_fast import issuer_client
from app.api.pinning import fingerprint_words, normalize_fingerprint, pinned_options
from app.api.probe import probe
from app.issuer.local_issuer import (
    LocalIssuer,
    load_local_issuer,
    remember,
    resolve_address,
    saved_address,
)
from app.issuer.records import IssuerKey
from app.shell.context import AppContext
from app.ui.widgets.tasks import TaskRunner
from service.hosting.network_address import is_loopback_url
from service.protocol.sealing import decode_key

DEMO_NAME = "Demo Payroll Pty Ltd"


class IssuerPanel(QFrame):
    """Signals: `probed(str)` after a saved address was checked ("" when it answers)."""

    probed = Signal(str)

    def __init__(self, context: AppContext, tasks: TaskRunner | None = None) -> None:
        super().__init__()
        self.setObjectName("section")
        self.context = context
        self.tasks = tasks
        self._client: ApiClient | None = None
        self._client_key: tuple[str, str, str, str] | None = None
        self._shown_embedded: str | None = None
        """The embedded service's address when the fields were filled (follow_service)."""
        self._name = ""
        self._use_demo = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 10, 16, 10)
        head = QHBoxLayout()
        self.summary = QLabel("")
        self.summary.setObjectName("issuerSummary")
        self.summary.setWordWrap(True)
        self.details_button = QToolButton()
        self.details_button.setObjectName("disclosure")
        self.details_button.setCheckable(True)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        head.addWidget(self.summary, 1)
        head.addWidget(self.details_button)
        layout.addLayout(head)
        self.warning = QLabel("")
        self.warning.setObjectName("issuerWarning")
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet(
            "background:#fff4ce;border:1px solid #c19c00;border-radius:6px;padding:6px 10px;"
            "color:#3b2f00;"
        )
        self.warning.hide()
        layout.addWidget(self.warning)
        self.unreachable = QLabel("")
        self.unreachable.setObjectName("issuerUnreachable")
        self.unreachable.setWordWrap(True)
        self.unreachable.setStyleSheet("color:#b3261e;font-weight:600;")
        self.unreachable.hide()
        layout.addWidget(self.unreachable)
        self.details = QWidget()
        self.details.setObjectName("issuerDetails")
        grid = QGridLayout(self.details)
        grid.setContentsMargins(0, 6, 0, 0)
        grid.setColumnStretch(1, 3)
        grid.setColumnStretch(3, 2)
        self.fields: dict[str, QLineEdit] = {}
        for index, (name, label, secret) in enumerate(
            (
                ("url", "Service address", False),
                ("client_id", "Client id", False),
                ("client_secret", "Client secret", True),
                ("encryption_key", "Encryption key", True),
                ("key_version", "Key version", False),
                ("fingerprint", "Certificate fingerprint", False),
            )
        ):
            edit = QLineEdit()
            edit.setObjectName(f"issuer:{name}")
            if secret:
                edit.setEchoMode(QLineEdit.EchoMode.Password)
            row, column = divmod(index, 2)
            caption = QLabel(label)
            caption.setObjectName("fieldLabel")
            if name == "fingerprint":  # its own row, wide enough to compare all 16 groups
                grid.addWidget(caption, 3, 0)
                grid.addWidget(edit, 3, 1, 1, 3)
            else:
                grid.addWidget(caption, row, column * 2)
                grid.addWidget(edit, row, column * 2 + 1)
            self.fields[name] = edit
        self.fields["fingerprint"].setPlaceholderText("on an office network: from Admin, as shown")
        self.remember = QCheckBox("Remember on this computer (secure password store)")
        # A row of its own: beside the key version its long text squeezed the fields at 150 %.
        grid.addWidget(self.remember, 4, 1, 1, 3)
        layout.addWidget(self.details)
        self.details_button.toggled.connect(self._show_details)
        self.reload()

    def _show_details(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.details_button.setText("Hide details ▴" if shown else "Details ▾")

    def reload(self) -> None:
        """Show the demo issuer or the one saved on this computer (after Admin saved one)."""
        context = self.context
        saved = load_local_issuer(context.settings, context.secrets)
        embedded = self._embedded_url()
        self._shown_embedded = embedded
        if saved is not None:  # "this computer" is the embedded service, whatever its port now
            saved = replace(saved, url=resolve_address(saved.url, embedded))
        # A payroll provider saved for this service (from Admin) wins over the demo one.
        here = context.service_url.rstrip("/")
        saved_here = saved is not None and saved.complete and saved.url.rstrip("/") == here
        info = context.issuer_info
        self._use_demo = context.issuer is not None and info is not None and not saved_here
        for edit in self.fields.values():
            edit.setReadOnly(self._use_demo)
        self.remember.setVisible(not self._use_demo)
        if self._use_demo:
            assert info is not None
            self._name = DEMO_NAME
            self.fields["client_id"].setText(info.client_id)
            self.fields["key_version"].setText(info.key_version)
            self.fields["url"].setText(context.service_url)
            for name in ("client_secret", "encryption_key"):
                self.fields[name].setText("••••••••")
            self.fields["fingerprint"].clear()
            self._set_summary(f"Issuing as <b>{DEMO_NAME}</b> (demo payroll provider)")
            self.details_button.setChecked(False)
            self._show_details(False)
            self._warn_scan_base(context.service.config.scan_base if context.service else "")
            self.unreachable.hide()
            return
        local = saved or LocalIssuer(url=context.service_url, client_id="")
        self.fields["url"].setText(local.url or context.service_url or "")
        self.fields["client_id"].setText(local.client_id)
        self.fields["key_version"].setText(local.key_version)
        self.fields["client_secret"].setText(local.client_secret)
        self.fields["encryption_key"].setText(local.encryption_key)
        self.fields["fingerprint"].setText(fingerprint_words(local.fingerprint))
        self._name = local.name
        if saved is not None and saved.complete:
            self._set_summary(f"Issuing as <b>{saved.name or saved.client_id}</b>")
            self.details_button.setChecked(False)
            self._show_details(False)
            on_embedded = embedded is not None and saved.url == embedded.rstrip("/")
            service = context.service
            self._warn_scan_base(
                service.config.scan_base if on_embedded and service is not None else saved.url
            )
            own = context.own_options() if on_embedded else pinned_options(saved.fingerprint)
            self._probe(saved.url, own)
        else:
            self.warning.hide()
            self.unreachable.hide()
            self._set_summary(
                "No payroll provider is set up on this computer yet. In Admin, add one and tick "
                "“Use this issuer for issuing on this computer”, or enter the details you were "
                "given below."
            )
            self.details_button.setChecked(True)
            self._show_details(True)

    def _warn_scan_base(self, scan_base: str) -> None:
        """Say plainly when the badges' links will only open on this computer."""
        if not scan_base or not is_loopback_url(scan_base):
            self.warning.hide()
            return
        if self.context.demo is not None:
            text = (
                "Demo: phones cannot open the links on these badges; they point at this "
                f"computer's own address ({scan_base})."
            )
        else:
            text = (
                "⚠ Phones cannot open the links on these badges: they point at this computer's "
                f"own address ({scan_base}). Before issuing real payslips, set the address for "
                "badges on the Service screen."
            )
        self.warning.setText(text)
        self.warning.show()

    def _probe(self, url: str, own: dict[str, object]) -> None:
        """Check the saved address off the GUI thread; say at once, naming it, if it is dead."""
        self.unreachable.hide()
        if self.tasks is None or not url:
            return
        verify = own.get("verify", True)
        # A method, not a closure: the runner drops its answer once this panel is deleted.
        self.tasks.run(lambda: probe(url, verify), self._show_probe)  # type: ignore[arg-type]

    def _show_probe(self, problem: str | None) -> None:
        text = f"The saved service address does not answer. {problem}" if problem else ""
        self.unreachable.setText(text)
        self.unreachable.setVisible(bool(text))
        self.probed.emit(text)

    def follow_service(self) -> None:
        """After the embedded service restarted (perhaps on another port, or back from a
        stand-in port): an address shown for it follows; anything typed in is left alone."""
        old, new = self._shown_embedded, self._embedded_url()
        self._shown_embedded = new
        shown = self.fields["url"].text().strip().rstrip("/")
        if old and new and old.rstrip("/") != new.rstrip("/") and shown == old.rstrip("/"):
            self.fields["url"].setText(new)

    def _embedded_url(self) -> str | None:
        """This computer's own service (not a demo's, which is gone at the next start)."""
        service = self.context.service
        return service.url if service is not None and self.context.demo is None else None

    def _set_summary(self, html: str) -> None:
        self.summary.setText(html)

    @property
    def name(self) -> str:
        return self._name

    def credentials(self) -> tuple[ApiClient, IssuerKey, str]:
        """(client, key, scan base). Raises ValueError with a plain message when incomplete."""
        context = self.context
        if self._use_demo and context.issuer is not None and context.issuer_info is not None:
            scan_base = context.service.config.scan_base if context.service else context.service_url
            return context.issuer, IssuerKey.from_info(context.issuer_info), scan_base
        url = self.fields["url"].text().strip().rstrip("/")
        client_id = self.fields["client_id"].text().strip()
        secret = self.fields["client_secret"].text().strip()
        key_text = self.fields["encryption_key"].text().strip()
        key_version = self.fields["key_version"].text().strip() or None
        fingerprint_text = self.fields["fingerprint"].text().strip()
        fingerprint = normalize_fingerprint(fingerprint_text) if fingerprint_text else ""
        if not (url and client_id and secret and key_text):
            self.details_button.setChecked(True)
            raise ValueError(
                "No payroll provider is set up for issuing: fill in the details under "
                "“Details”, or set one up in Admin."
            )
        try:
            key = IssuerKey(decode_key(key_text), key_version)
        except ValueError:
            self.details_button.setChecked(True)
            raise ValueError("The encryption key is not valid; copy it again in full.") from None
        if fingerprint is None:
            self.details_button.setChecked(True)
            raise ValueError(
                "The certificate fingerprint is not a SHA-256 fingerprint; copy it again in full "
                "(64 letters and digits, as Admin shows it), or leave it empty."
            )
        ident = (url, client_id, secret, fingerprint)
        embedded = context.service is not None and context.service.url.rstrip("/") == url
        if self._client is None or self._client_key != ident:
            if self._client is not None:
                self._client.close()
            own = context.own_options() if embedded else pinned_options(fingerprint)
            self._client = issuer_client(url, client_id, secret, **own)
            self._client_key = ident
        scan_base = context.service.config.scan_base if embedded and context.service else url
        self._save(url, client_id, secret, key_text, key_version, fingerprint)
        return self._client, key, scan_base

    def _save(
        self,
        url: str,
        client_id: str,
        secret: str,
        key_text: str,
        key_version: str | None,
        fingerprint: str,
    ) -> None:
        keep = self.remember.isChecked()
        address = saved_address(url, self._embedded_url())
        issuer = LocalIssuer(
            address, client_id, self._name, key_version or "", secret, key_text, fingerprint
        )
        with contextlib.suppress(OSError):  # not remembering the address is no reason to stop
            remember(self.context.settings, self.context.secrets, issuer, with_secrets=keep)

    def close_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
