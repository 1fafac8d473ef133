-- Lobster store, schema version 4: run journals (see state/journal.rs and
-- journal/). One row per event, hash-chained by the writer (`prev`, `hash`:
-- blake3 hex; `event`: the event's canonical JSON, kept as text so the
-- bytes hashed are the bytes read back); one summary per run for listing.
CREATE TABLE lobster_journal (
    tenant text   NOT NULL,
    run_id text   NOT NULL,
    seq    bigint NOT NULL,
    prev   text   NOT NULL,
    hash   text   NOT NULL,
    event  text   NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE lobster_journal_runs (
    tenant     text        NOT NULL,
    run_id     text        PRIMARY KEY,
    name       text        NOT NULL DEFAULT '',
    door       text        NOT NULL DEFAULT '',
    status     text        NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz,
    gate       text,
    head       text        NOT NULL,
    events     bigint      NOT NULL
);

CREATE INDEX lobster_journal_runs_by_start
    ON lobster_journal_runs (tenant, started_at DESC, run_id DESC);
