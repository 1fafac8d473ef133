//! Workflow files driven through the binary: loading, validation with
//! positions, args, templating (without shell injection), conditions, every
//! step kind, gates, tamper-proof and exactly-once resume, graph, dry-run,
//! and the examples in `examples/workflows/`: one submodule per concept,
//! with the helpers they share here.

use crate::common::{Env, Run};
use serde_json::Value;
use std::path::{Path, PathBuf};

mod control;
mod examples;
mod gates;
mod loading;
mod resume;
mod steps;

impl Env {
    /// Write a workflow file into the work dir; returns its path.
    fn wf(&self, name: &str, text: &str) -> String {
        let p = self.work_path(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn wf_tool(&self, file: &str, args: Option<&str>) -> Run {
        let mut argv = vec!["run", "--mode", "tool", "--file", file];
        if let Some(a) = args {
            argv.extend(["--args-json", a]);
        }
        self.run(&argv)
    }
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/workflows")
        .canonicalize()
        .unwrap()
}

fn ok_output(r: &Run) -> Value {
    let v = r.json();
    assert_eq!(v["status"], "ok", "{r:?}");
    assert_eq!(r.code, 0, "{r:?}");
    v["output"].clone()
}

fn error_message(r: &Run) -> String {
    r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The example WebAssembly steps copied with the sample mail into the
/// sandbox; `None` (skipped loudly) when not built.
fn wasm_setup(env: &Env) -> Option<()> {
    env.copy_examples("steps").map(|_| ())
}

const MAIL_WORKFLOW: &str = "steps:\n  - id: list\n    uses: steps/inbox_list.wasm\n  - id: cat\n    pipeline: inbox.categorize\n    stdin: $list.json\n  - id: gate\n    approval: Apply labels?\n    stdin: $cat.json\n  - id: apply\n    pipeline: inbox.apply --apply\n    stdin: $cat.json\n";
