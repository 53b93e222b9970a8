-- Version 1: the schema as it was before versioned migrations (pairings included).
-- IF NOT EXISTS throughout: databases made by the pre-migration code already hold it.

CREATE TABLE IF NOT EXISTS records (
    service_reference text PRIMARY KEY,
    seq               bigint GENERATED ALWAYS AS IDENTITY,
    issuer_id         text NOT NULL,
    "schema"          text NOT NULL,
    issued_at         text NOT NULL,
    payslip_non_pii   jsonb NOT NULL,
    iv                text NOT NULL,
    tag               text NOT NULL,
    key_version       text,
    fingerprint       text NOT NULL,
    registered_at     text NOT NULL,
    status            text NOT NULL DEFAULT 'active',
    revoked_at        text,
    revoke_reason     text,
    CONSTRAINT records_issuer_iv_key UNIQUE (issuer_id, iv)
);

CREATE TABLE IF NOT EXISTS issuers (
    issuer_id   text PRIMARY KEY,
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    name        text NOT NULL,
    created_at  text NOT NULL
);

CREATE TABLE IF NOT EXISTS verifiers (
    verifier_id text PRIMARY KEY,
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    name        text NOT NULL,
    created_at  text NOT NULL
);

CREATE TABLE IF NOT EXISTS clients (
    client_id   text PRIMARY KEY,
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    role        text NOT NULL,
    owner_id    text NOT NULL,
    name        text NOT NULL,
    secret_hmac text NOT NULL,
    created_at  text NOT NULL,
    disabled    boolean NOT NULL DEFAULT false
);

CREATE TABLE IF NOT EXISTS keys (
    key_version text PRIMARY KEY,
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    issuer_id   text NOT NULL,
    number      integer NOT NULL,
    state       text NOT NULL,
    wrapped     text NOT NULL,
    created_at  text NOT NULL,
    retired_at  text
);

CREATE INDEX IF NOT EXISTS keys_issuer_idx ON keys (issuer_id, number);

CREATE TABLE IF NOT EXISTS settings (
    name  text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE IF NOT EXISTS pairings (
    pairing_id  text PRIMARY KEY,
    client_id   text NOT NULL,
    secret_hmac text NOT NULL,
    created_at  text NOT NULL,
    expires_at  text NOT NULL
);
