"""Onboarding and key management (PROTOCOL §8), shared by the CLI and the admin HTTP routes.

Credentials and encryption keys are returned once, at creation; `overview` never includes a
secret, a digest or key material.
"""

from __future__ import annotations

import uuid
from typing import TypeVar

from service.domain.clients import ClientRegistry
from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError, validation_failed
from service.domain.keys import KEY_VERSION_RE, KeyRing
from service.protocol.errors import ErrorCode
from service.protocol.schemas import (
    AdminClientCreated,
    ClientDisabled,
    ClientSummary,
    IssuerCreated,
    IssuerSummary,
    KeyCreated,
    KeyRetired,
    KeySummary,
    Overview,
    VerifierCreated,
    VerifierSummary,
)
from service.protocol.vocabulary import KeyState
from service.storage.port import Issuer, Store, Verifier

MAX_NAME = 200
NAME_REQUIRED = "is required and must be non-empty text"
"""The message for a missing or non-text `name` (also said where an HTTP body is read)."""


S = TypeVar("S", VerifierSummary, ClientSummary, KeySummary)


def _summary(model: type[S], row: object) -> S:
    """A stored row as its overview summary: the model reads only the fields it declares, so a
    row's secret digest (`Client.secret_hmac`) or wrapped key (`KeyVersion.wrapped`) never
    reaches it."""
    return model.model_validate(row, from_attributes=True)


def _check_name(name: str) -> str:
    if not name.strip():
        raise validation_failed("name", NAME_REQUIRED)
    if len(name) > MAX_NAME or any(ord(c) < 32 for c in name):
        raise validation_failed("name", f"must be at most {MAX_NAME} printable characters")
    return name.strip()


class Admin:
    def __init__(self, store: Store, keys: KeyRing, clients: ClientRegistry, clock: Clock) -> None:
        self._store = store
        self._keys = keys
        self._clients = clients
        self._clock = clock

    def create_issuer(self, name: str) -> IssuerCreated:
        clean = _check_name(name)
        issuer_id = str(uuid.uuid4())
        self._store.add_issuer(Issuer(issuer_id, clean, iso_z(self._clock.now())))
        key = self._keys.create_key(issuer_id)
        client_id, secret = self._clients.create("issuer", issuer_id, clean)
        return IssuerCreated(
            issuer_id=issuer_id,
            client_id=client_id,
            client_secret=secret,
            key_version=key.key_version,
            encryption_key=key.encryption_key,
        )

    def create_verifier(self, name: str) -> VerifierCreated:
        clean = _check_name(name)
        verifier_id = str(uuid.uuid4())
        self._store.add_verifier(Verifier(verifier_id, clean, iso_z(self._clock.now())))
        client_id, secret = self._clients.create("verifier", verifier_id, clean)
        return VerifierCreated(verifier_id=verifier_id, client_id=client_id, client_secret=secret)

    def create_admin_client(self, name: str = "admin") -> AdminClientCreated:
        client_id, secret = self._clients.create("admin", "admin", name)
        return AdminClientCreated(admin_client_id=client_id, admin_client_secret=secret)

    def rotate_key(self, issuer_id: str) -> KeyCreated:
        if self._store.get_issuer(issuer_id) is None:
            raise ServiceError(ErrorCode.SERVICE_REFERENCE_NOT_FOUND, "no such issuer")
        key = self._keys.create_key(issuer_id)
        return KeyCreated(key_version=key.key_version, encryption_key=key.encryption_key)

    def retire_key(self, key_version: str) -> KeyRetired:
        if not KEY_VERSION_RE.match(key_version):
            raise validation_failed("key_version", "must look like <issuer uuid>.<n>")
        retired = self._keys.retire(key_version)
        return KeyRetired(key_version=retired.key_version, status=KeyState.RETIRED)

    def disable_client(self, client_id: str, *, keep_an_admin: bool = False) -> ClientDisabled:
        """`keep_an_admin` (the HTTP route): refuse to disable the last enabled admin client,
        which would leave no one able to use the admin API (issue 37); the CLI, run on the data
        directory by whoever holds it, may."""
        if keep_an_admin:
            admins = [c for c in self._store.list_clients() if c.role == "admin" and not c.disabled]
            if [c.client_id for c in admins] == [client_id]:
                raise ServiceError(
                    ErrorCode.CONFLICT,
                    "this is the last enabled admin client: disabling it would lock the admin "
                    "API; create another admin client first, or use the CLI on the data directory",
                )
        if not self._store.set_client_disabled(client_id, True):
            raise ServiceError(ErrorCode.SERVICE_REFERENCE_NOT_FOUND, "no such client")
        return ClientDisabled(client_id=client_id, disabled=True)

    def overview(self) -> Overview:
        counts = self._store.counts()
        return Overview(
            issuers=[
                IssuerSummary(
                    issuer_id=i.issuer_id,
                    name=i.name,
                    created_at=i.created_at,
                    records=counts.records_by_issuer.get(i.issuer_id, 0),
                    revoked=counts.revoked_by_issuer.get(i.issuer_id, 0),
                    unpinned=counts.unpinned_by_issuer.get(i.issuer_id, 0),
                )
                for i in self._store.list_issuers()
            ],
            verifiers=[_summary(VerifierSummary, v) for v in self._store.list_verifiers()],
            clients=[_summary(ClientSummary, c) for c in self._store.list_clients()],
            keys=[
                _summary(KeySummary, k).model_copy(
                    update={"records": counts.active_by_key.get(k.key_version, 0)}
                )
                for k in self._store.list_keys()
            ],
            record_count=sum(counts.records_by_issuer.values()),
        )
