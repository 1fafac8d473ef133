-- Lobster store, schema version 3: paused runs whose steps after the gate are
-- all pure (see policy/recovery.rs) carry `rerun`. When the claimer of such a
-- run dies, its expired claim is claimed again (the steps run anew from the
-- gate) instead of turning `interrupted`: running pure steps twice does
-- nothing twice. The claim epoch still rises, so the dead claimer's writes
-- stay fenced off.
ALTER TABLE lobster_runs ADD COLUMN rerun boolean NOT NULL DEFAULT false;
