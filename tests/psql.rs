//! Shared by the CLI and serve test crates (included with `#[path]`).

/// Run `sql` against the test database at `url` with psql; its output,
/// trimmed. Fails the test when psql fails.
pub fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .arg(url)
        .args(["-v", "ON_ERROR_STOP=1", "-qAtc", sql])
        .output()
        .expect("psql (postgresql-client) runs");
    assert!(out.status.success(), "psql {sql}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
