//! The state store's schema, for `lobster store migrate` and `lobster
//! doctor`: migrated on request, and described.

use crate::error::Result;
use crate::state::StateStore;

/// Migrate `store` and describe its schema.
pub fn migrate(store: &StateStore) -> Result<String> {
    let Some(pg) = store.pg()? else {
        return Ok(format!(
            "store: {}\nnothing to migrate: the files store has no schema\n",
            store.describe()
        ));
    };
    let (applied, versions) = pg.migrate_now()?;
    let mut out = format!("store: {}\n", store.describe());
    let current = versions.last().map_or(0, |v| v.0);
    out.push_str(&format!(
        "schema version {current} ({})\n",
        if applied.is_empty() {
            "up to date".to_string()
        } else {
            format!("applied now: {applied:?}")
        }
    ));
    for (v, name, at) in versions {
        out.push_str(&format!("  {v}  {name}  applied {at}\n"));
    }
    Ok(out)
}
