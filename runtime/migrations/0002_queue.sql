-- Lobster store, schema version 2: a queue of runs for whichever node is
-- free (lobster serve). Taking a job is `FOR UPDATE SKIP LOCKED`; enqueueing
-- notifies channel `lobster_queue` (payload: the tenant); a taken job holds a
-- lease and an epoch like a claimed run, and one whose taker died turns
-- `interrupted`, never queued again.
CREATE TABLE lobster_queue (
    tenant      text        NOT NULL,
    id          text        NOT NULL,
    payload     text        NOT NULL,
    status      text        NOT NULL CHECK (status IN ('queued', 'running', 'interrupted')),
    epoch       bigint      NOT NULL DEFAULT 0,
    enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_until timestamptz,
    taken_by    text,
    PRIMARY KEY (tenant, id)
);

CREATE INDEX lobster_queue_ready ON lobster_queue (tenant, enqueued_at) WHERE status = 'queued';
