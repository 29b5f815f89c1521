-- Leases of detached turns: the replica running a turn (lease_owner), when
-- its lease lapses unless renewed (lease_expires_at) and its last heartbeat
-- (heartbeat_at), all RFC 3339. A renewal rewrites these columns and the
-- revision in one conditional UPDATE, without rewriting the snapshot's
-- metadata or state; a row whose lease_owner is set has its snapshot's
-- heartbeatAt, leaseOwner and leaseExpiresAt read from them.
--
-- Rows written before this migration keep NULLs here, and their snapshots
-- read back exactly as before (a pending one of them expires by its
-- heartbeat, as it did).

ALTER TABLE genkit_snapshots ADD COLUMN lease_owner TEXT;
ALTER TABLE genkit_snapshots ADD COLUMN lease_expires_at TEXT;
ALTER TABLE genkit_snapshots ADD COLUMN heartbeat_at TEXT;
