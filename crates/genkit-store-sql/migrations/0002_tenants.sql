-- Tenants: every row belongs to one, and every key is unique only within
-- its tenant, so two tenants may use the same session, snapshot and
-- side-effect ids without ever seeing each other's rows. The store scopes
-- every statement by the tenant of the running action (`tenant_fn`), or by
-- its fixed tenant ('global' unless configured).
--
-- Keys change, so the tables are rebuilt: new tables, the rows copied into
-- tenant 'global' (the default, so a database written before tenants keeps
-- working unchanged), the old tables dropped and the new ones renamed. The
-- same SQL runs on SQLite (which renames foreign-key references with the
-- table) and PostgreSQL, in the migration's one transaction.

CREATE TABLE genkit_sessions_v2 (
    tenant     TEXT NOT NULL,
    session_id TEXT NOT NULL,
    version    BIGINT NOT NULL CHECK (version >= 1),
    leaves     BIGINT NOT NULL CHECK (leaves >= 1),
    latest_id  TEXT NOT NULL,
    PRIMARY KEY (tenant, session_id)
);

CREATE TABLE genkit_snapshots_v2 (
    tenant      TEXT NOT NULL,
    snapshot_id TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    parent_id   TEXT,
    seq         BIGINT NOT NULL CHECK (seq >= 1),
    revision    BIGINT NOT NULL CHECK (revision >= 1),
    kind        TEXT NOT NULL CHECK (kind IN ('checkpoint', 'diff')),
    status      TEXT,
    meta        TEXT NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (tenant, snapshot_id),
    FOREIGN KEY (tenant, session_id) REFERENCES genkit_sessions_v2 (tenant, session_id),
    -- A parent is a snapshot of the same tenant (not checked when NULL).
    FOREIGN KEY (tenant, parent_id) REFERENCES genkit_snapshots_v2 (tenant, snapshot_id),
    UNIQUE (tenant, session_id, seq)
);

CREATE TABLE genkit_effects_v2 (
    tenant      TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    effect_key  TEXT NOT NULL,
    result      TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (tenant, session_id, effect_key)
);

INSERT INTO genkit_sessions_v2 (tenant, session_id, version, leaves, latest_id)
SELECT 'global', session_id, version, leaves, latest_id FROM genkit_sessions;

INSERT INTO genkit_snapshots_v2
    (tenant, snapshot_id, session_id, parent_id, seq, revision, kind, status, meta, body)
SELECT 'global', snapshot_id, session_id, parent_id, seq, revision, kind, status, meta, body
  FROM genkit_snapshots;

INSERT INTO genkit_effects_v2 (tenant, session_id, effect_key, result, recorded_at)
SELECT 'global', session_id, effect_key, result, recorded_at FROM genkit_effects;

DROP TABLE genkit_effects;
DROP TABLE genkit_snapshots;
DROP TABLE genkit_sessions;

ALTER TABLE genkit_sessions_v2 RENAME TO genkit_sessions;
ALTER TABLE genkit_snapshots_v2 RENAME TO genkit_snapshots;
ALTER TABLE genkit_effects_v2 RENAME TO genkit_effects;

CREATE INDEX genkit_snapshots_children ON genkit_snapshots (tenant, parent_id);
