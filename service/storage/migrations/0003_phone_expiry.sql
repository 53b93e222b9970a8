-- Version 3 (issue 37): a paired phone's client expires, and Admin shows when a client last got
-- a token. Nullable columns added, so the previous release's code still reads and writes rows.

ALTER TABLE clients ADD COLUMN IF NOT EXISTS expires_at text;
ALTER TABLE clients ADD COLUMN IF NOT EXISTS last_used_at text;
ALTER TABLE pairings ADD COLUMN IF NOT EXISTS client_days integer NOT NULL DEFAULT 0;
