-- Genkit agent sessions: one row per session, one per snapshot, one per
-- recorded side effect. The same SQL runs on SQLite and PostgreSQL.

-- A session: its version (the number of snapshots appended to it; every
-- append bumps it in the transaction that inserts the snapshot, provided it
-- is still the version the turn read), how many of its snapshots no other
-- continues (its leaves; more than one: a branched session), and its newest
-- snapshot (always a leaf; the only one when `leaves` is 1).
CREATE TABLE genkit_sessions (
    session_id TEXT PRIMARY KEY,
    version    BIGINT NOT NULL CHECK (version >= 1),
    leaves     BIGINT NOT NULL CHECK (leaves >= 1),
    latest_id  TEXT NOT NULL
);

-- A snapshot, never changed by later appends: its metadata (the snapshot without its state, as JSON) and
-- its state, either whole (kind 'checkpoint': the state's JSON, `null` when
-- it has none) or as the JSON Patch from its parent's state (kind 'diff').
CREATE TABLE genkit_snapshots (
    snapshot_id TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES genkit_sessions (session_id),
    parent_id   TEXT REFERENCES genkit_snapshots (snapshot_id),
    -- The session version this snapshot's append produced (1, 2, ...).
    seq         BIGINT NOT NULL CHECK (seq >= 1),
    -- 1 when appended, +1 per rewrite.
    revision    BIGINT NOT NULL CHECK (revision >= 1),
    kind        TEXT NOT NULL CHECK (kind IN ('checkpoint', 'diff')),
    status      TEXT,
    meta        TEXT NOT NULL,
    body        TEXT NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE INDEX genkit_snapshots_children ON genkit_snapshots (parent_id);

-- Side-effect results, recorded at once outside any turn: the first record
-- under a key wins.
CREATE TABLE genkit_effects (
    session_id  TEXT NOT NULL,
    effect_key  TEXT NOT NULL,
    result      TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (session_id, effect_key)
);
