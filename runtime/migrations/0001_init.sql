-- Lobster store, schema version 1: key/value state and paused runs.
-- Every row carries its tenant and every query filters by it.

-- state.get / state.set / diff.last values, approval-id aliases, the token
-- key and spent one-time nonces. `key` is the files store's file name for the
-- key (lower-cased, normalised, `.json` appended), so both stores agree on
-- which keys are the same; `value` is the JSON text as the files store writes it.
CREATE TABLE lobster_kv (
    tenant     text        NOT NULL,
    key        text        NOT NULL,
    value      text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, key)
);

-- Resume states of paused runs (keys pipeline_resume_* / workflow_resume_*),
-- with the exactly-once claim: `status` paused -> resuming (claim_epoch + 1,
-- a lease) -> row deleted when the resume ends; a lease that expires without
-- the row being released turns it `interrupted`, which is never claimed again.
CREATE TABLE lobster_runs (
    tenant      text        NOT NULL,
    state_key   text        NOT NULL,
    body        text        NOT NULL,
    status      text        NOT NULL CHECK (status IN ('paused', 'resuming', 'interrupted')),
    claim_epoch bigint      NOT NULL DEFAULT 0,
    lease_until timestamptz,
    claimed_at  timestamptz,
    claimed_by  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, state_key)
);

CREATE INDEX lobster_runs_expiring ON lobster_runs (lease_until) WHERE status = 'resuming';
