//! Two `lobster serve` processes on one PostgreSQL database
//! (`LOBSTER_TEST_PG_URL`, e.g. `export LOBSTER_TEST_PG_URL=$(bash tests/pg.sh
//! start)`): a gate paused on one node is decided on the other, exactly once
//! among racers on both; a killed node's run reads `interrupted` on the
//! other once its heartbeat is a lease old. Without the URL these tests fail
//! under `CI=true` and skip loudly elsewhere. Each test uses tenants and
//! node ids of its own, so they share one database safely.
//!
//! The cluster harness is here; the tests in the submodules.

use super::*;
use crate::own_pg::pg_url;

mod database;
mod decisions;

fn rand_hex() -> String {
    let mut b = [0u8; 6];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A cluster of nodes over one database: tenant `h` (self_approve false:
/// humans decide through links) and tenant `s` (self_approve true), both
/// trusted, under names of this test's own.
struct Cluster {
    dir: tempfile::TempDir,
    url: String,
    /// The tenants' real names (`h-<rand>`, `s-<rand>`).
    h: String,
    s: String,
}

const H: &str = "human-token";
const S: &str = "self-approve-token";

impl Cluster {
    fn new() -> Option<Cluster> {
        let url = pg_url()?;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("trusted.toml"), "trust = \"trusted\"\n").unwrap();
        let r = rand_hex();
        Some(Cluster {
            dir,
            url,
            h: format!("h-{r}"),
            s: format!("s-{r}"),
        })
    }

    /// Start node `name` (its own local directory), with `env` set.
    fn node(&self, name: &str, extra: &str, env: &[(&str, &str)]) -> Server {
        self.node_with(name, extra, env, 64)
    }

    /// [`Cluster::node`] with `max_runs` as tenant `s`'s max_concurrent_runs.
    fn node_with(&self, name: &str, extra: &str, env: &[(&str, &str)], max_runs: usize) -> Server {
        self.node_full(name, extra, env, max_runs, "")
    }

    /// [`Cluster::node_with`] with `s_extra` appended to tenant `s`'s table.
    fn node_full(
        &self,
        name: &str,
        extra: &str,
        env: &[(&str, &str)],
        max_runs: usize,
        s_extra: &str,
    ) -> Server {
        let node_id = format!("{name}-{}", rand_hex());
        let config = format!(
            "state = \"{}\"\nnode_id = \"{node_id}\"\n{extra}\n\
[[tenant]]\nname = \"{}\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nmax_concurrent_runs = 64\nrequests_per_minute = 100000\n\
[[tenant.approver]]\nname = \"{}\"\ntoken_sha256 = \"{}\"\n\
[[tenant]]\nname = \"{}\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nself_approve = true\nmax_concurrent_runs = {max_runs}\nrequests_per_minute = 100000\n{s_extra}\n",
            self.url,
            self.h,
            sha(H),
            ALICE.0,
            sha(ALICE.1),
            self.s,
            sha(S)
        );
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, config).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--config"])
            .arg(&path)
            .args(["--listen", "127.0.0.1:0"])
            .env("LOBSTER_STATE_DIR", self.dir.path().join(name))
            .env_remove("LOBSTER_POLICY")
            .env_remove("LOBSTER_STORE_LEASE_MS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        Server::spawn(&mut cmd)
    }
}

fn ran_on_a(rec: &Value) -> bool {
    rec["node"].as_str().unwrap().starts_with("a-")
}

fn paused(node: &Server, token: &str, pipeline: &str) -> String {
    let r = node.run(token, json!({ "pipeline": pipeline }));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    v["runId"].as_str().unwrap().to_string()
}
