-- Version 2: phone pairings. The table was first added to version 1 without a version bump, so a
-- database stamped 1 by earlier code may lack it; IF NOT EXISTS makes this a no-op elsewhere.

CREATE TABLE IF NOT EXISTS pairings (
    pairing_id  text PRIMARY KEY,
    client_id   text NOT NULL,
    secret_hmac text NOT NULL,
    created_at  text NOT NULL,
    expires_at  text NOT NULL
);
