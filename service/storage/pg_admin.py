"""The PostgreSQL adapter's administrative tables: issuers, verifiers, clients, keys, phone
pairings and instance settings.

The port does not say what adding an existing issuer, verifier, client or key does. Replacing would
be the dangerous reading: two workers running ``KeyRing.create_key`` for one issuer at once compute
the same next key_version, and a silent replace would destroy a key whose raw material was already
handed to a caller (likewise a client's secret). So ``add_*`` is a plain INSERT and a duplicate id
fails like any other database error, with ``StoreUnavailable`` (rolling back ``add_key``'s demotion
too). Ids are random otherwise, so only races hit this. A plain INSERT is never repeated after a
lost connection (`Retry.NEVER`: it may have committed); writes whose repeat answers the same
(conditional updates, upserts) are.
"""

from __future__ import annotations

from typing import TypeVar

from service.protocol.vocabulary import KeyState
from service.storage.pg_database import Conn, PgDatabase, Retry, transaction
from service.storage.pg_rows import client_from_row, key_from_row
from service.storage.port import Client, Issuer, KeyVersion, Pairing, Verifier

_Party = TypeVar("_Party", Issuer, Verifier)


def _storable(text: str) -> bool:
    """Whether PostgreSQL text can hold `text` (it cannot hold NUL). An id from a URL path that
    holds one names no row, so a lookup answers "none" instead of psycopg refusing the query
    (which would be a 503 + Retry-After, for a request that can never succeed)."""
    return "\x00" not in text


class AdminTables:
    """The administrative half of `PostgresStore` (a mixin: it runs on the store's `_db`)."""

    _db: PgDatabase

    # --- issuers, verifiers, clients -----------------------------------------------------
    def add_issuer(self, issuer: Issuer) -> None:
        """Insert. An existing id is refused with StoreUnavailable (module docstring)."""
        self._db.run(
            lambda conn: conn.execute(
                "INSERT INTO issuers (issuer_id, name, created_at) VALUES (%s, %s, %s)",
                (issuer.issuer_id, issuer.name, issuer.created_at),
            ),
            Retry.NEVER,
        )

    def get_issuer(self, issuer_id: str) -> Issuer | None:
        if not _storable(issuer_id):
            return None

        def work(conn: Conn) -> Issuer | None:
            row = conn.execute(
                "SELECT issuer_id, name, created_at FROM issuers WHERE issuer_id = %s",
                (issuer_id,),
            ).fetchone()
            return Issuer(**row) if row else None

        return self._db.run(work, Retry.SAFE)

    def list_issuers(self) -> list[Issuer]:
        """In insertion order."""
        return self._in_order(
            Issuer, "SELECT issuer_id, name, created_at FROM issuers ORDER BY seq"
        )

    def add_verifier(self, verifier: Verifier) -> None:
        """Insert. An existing id is refused with StoreUnavailable (module docstring)."""
        self._db.run(
            lambda conn: conn.execute(
                "INSERT INTO verifiers (verifier_id, name, created_at) VALUES (%s, %s, %s)",
                (verifier.verifier_id, verifier.name, verifier.created_at),
            ),
            Retry.NEVER,
        )

    def list_verifiers(self) -> list[Verifier]:
        """In insertion order."""
        return self._in_order(
            Verifier, "SELECT verifier_id, name, created_at FROM verifiers ORDER BY seq"
        )

    def _in_order(self, party: type[_Party], query: str) -> list[_Party]:
        """Every row of `query` (its columns named as `party`'s fields) as a `party`."""
        return self._db.run(
            lambda conn: [party(**row) for row in conn.execute(query)],
            Retry.SAFE,
        )

    def add_client(self, client: Client) -> None:
        """Insert. An existing id is refused with StoreUnavailable (module docstring)."""
        self._db.run(
            lambda conn: conn.execute(
                "INSERT INTO clients (client_id, role, owner_id, name, secret_hmac, created_at, "
                "disabled, expires_at, last_used_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    client.client_id,
                    client.role,
                    client.owner_id,
                    client.name,
                    client.secret_hmac,
                    client.created_at,
                    client.disabled,
                    client.expires_at,
                    client.last_used_at,
                ),
            ),
            Retry.NEVER,
        )

    def get_client(self, client_id: str) -> Client | None:
        if not _storable(client_id):
            return None

        def work(conn: Conn) -> Client | None:
            row = conn.execute(
                "SELECT * FROM clients WHERE client_id = %s", (client_id,)
            ).fetchone()
            return client_from_row(row) if row else None

        return self._db.run(work, Retry.SAFE)

    def list_clients(self) -> list[Client]:
        """In insertion order."""
        return self._db.run(
            lambda conn: [
                client_from_row(row) for row in conn.execute("SELECT * FROM clients ORDER BY seq")
            ],
            Retry.SAFE,
        )

    def set_client_disabled(self, client_id: str, disabled: bool) -> bool:
        """See the port."""
        if not _storable(client_id):
            return False

        def work(conn: Conn) -> bool:
            cur = conn.execute(
                "UPDATE clients SET disabled = %s WHERE client_id = %s", (disabled, client_id)
            )
            return cur.rowcount > 0

        return self._db.run(work, Retry.SAFE)

    def touch_client(self, client_id: str, at: str) -> None:
        if not _storable(client_id):
            return
        self._db.run(
            lambda conn: conn.execute(
                "UPDATE clients SET last_used_at = %s WHERE client_id = %s", (at, client_id)
            ),
            Retry.SAFE,
        )

    # --- keys ----------------------------------------------------------------------------
    def add_key(self, key: KeyVersion, demote_active: bool) -> None:
        """See the port. Demotion and insert share one transaction, so there is never a moment
        with two active keys or none. An existing key_version is refused with StoreUnavailable
        (module docstring) and the demotion is rolled back with it."""

        def work(conn: Conn) -> None:
            with transaction(conn):
                if demote_active:
                    conn.execute(
                        "UPDATE keys SET state = %s "
                        "WHERE issuer_id = %s AND state = %s AND key_version <> %s",
                        (KeyState.LIVE, key.issuer_id, KeyState.ACTIVE, key.key_version),
                    )
                conn.execute(
                    "INSERT INTO keys "
                    "(key_version, issuer_id, number, state, wrapped, created_at, retired_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        key.key_version,
                        key.issuer_id,
                        key.number,
                        key.state,
                        key.wrapped,
                        key.created_at,
                        key.retired_at,
                    ),
                )

        self._db.run(work, Retry.BEFORE_COMMIT)

    def get_key(self, key_version: str) -> KeyVersion | None:
        if not _storable(key_version):
            return None

        def work(conn: Conn) -> KeyVersion | None:
            row = conn.execute(
                "SELECT * FROM keys WHERE key_version = %s", (key_version,)
            ).fetchone()
            return key_from_row(row) if row else None

        return self._db.run(work, Retry.SAFE)

    def list_keys(self, issuer_id: str | None = None) -> list[KeyVersion]:
        """In insertion order, optionally only one issuer's."""

        def work(conn: Conn) -> list[KeyVersion]:
            if issuer_id is None:
                cur = conn.execute("SELECT * FROM keys ORDER BY seq")
            else:
                cur = conn.execute(
                    "SELECT * FROM keys WHERE issuer_id = %s ORDER BY seq",
                    (issuer_id,),
                )
            return [key_from_row(row) for row in cur]

        return self._db.run(work, Retry.SAFE)

    def retire_key(self, key_version: str, at: str) -> KeyVersion | None:
        """See the port. A repeat keeps the first retirement time; the material stays empty."""
        if not _storable(key_version):
            return None

        def work(conn: Conn) -> KeyVersion | None:
            row = conn.execute(
                "UPDATE keys SET state = %s, wrapped = '', "
                "retired_at = COALESCE(retired_at, %s) "
                "WHERE key_version = %s RETURNING *",
                (KeyState.RETIRED, at, key_version),
            ).fetchone()
            return key_from_row(row) if row else None

        return self._db.run(work, Retry.SAFE)

    # --- phone pairings -------------------------------------------------------------------
    def add_pairing(self, pairing: Pairing) -> None:
        self._db.run(
            lambda conn: conn.execute(
                "INSERT INTO pairings (pairing_id, client_id, secret_hmac, created_at, expires_at, "
                "client_days) VALUES (%s, %s, %s, %s, %s, %s)",
                (
                    pairing.pairing_id,
                    pairing.client_id,
                    pairing.secret_hmac,
                    pairing.created_at,
                    pairing.expires_at,
                    pairing.client_days,
                ),
            ),
            Retry.NEVER,
        )

    def take_pairing(self, pairing_id: str, secret_hmac: str) -> Pairing | None:
        """See the port: one DELETE ... RETURNING, so two takers cannot both get the row. Never
        repeated: a repeat after an unseen commit would answer "no such pairing"."""

        def work(conn: Conn) -> Pairing | None:
            row = conn.execute(
                "DELETE FROM pairings WHERE pairing_id = %s AND secret_hmac = %s "
                "RETURNING pairing_id, client_id, secret_hmac, created_at, expires_at, "
                "client_days",
                (pairing_id, secret_hmac),
            ).fetchone()
            return Pairing(**row) if row else None

        return self._db.run(work, Retry.NEVER)

    def purge_pairings(self, expired_before: str) -> int:
        def work(conn: Conn) -> int:
            cur = conn.execute("DELETE FROM pairings WHERE expires_at < %s", (expired_before,))
            return cur.rowcount

        return self._db.run(work, Retry.NEVER)  # a repeat would count 0

    # --- instance settings ---------------------------------------------------------------
    def get_setting(self, name: str) -> str | None:
        def work(conn: Conn) -> str | None:
            row = conn.execute("SELECT value FROM settings WHERE name = %s", (name,)).fetchone()
            return row["value"] if row else None

        return self._db.run(work, Retry.SAFE)

    def set_setting(self, name: str, value: str) -> None:
        self._db.run(
            lambda conn: conn.execute(
                "INSERT INTO settings (name, value) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                (name, value),
            ),
            Retry.SAFE,
        )

    def replace_setting(self, name: str, expected: str | None, value: str) -> bool:
        """See the port: one conditional statement. Never repeated: a repeat after an unseen
        commit would find its own value and answer False."""

        def work(conn: Conn) -> bool:
            if expected is None:
                cur = conn.execute(
                    "INSERT INTO settings (name, value) VALUES (%s, %s) "
                    "ON CONFLICT (name) DO NOTHING",
                    (name, value),
                )
            else:
                cur = conn.execute(
                    "UPDATE settings SET value = %s WHERE name = %s AND value = %s",
                    (value, name, expected),
                )
            return cur.rowcount == 1

        return self._db.run(work, Retry.NEVER)
