//! The workflow catalog: the workflow files of the `--workflows`
//! directories, each with a tool name, an args JSON Schema, its gates and
//! what it may do, for `lobster_workflows` and one tool per workflow.
//!
//! Loaded once at start-up (parse and validate only: nothing is compiled or
//! run), so a broken file or a name collision stops the server with a clear
//! error instead of surfacing in a model's tool call.

use crate::error::{Error, Result};
use crate::value::Item;
use crate::workflow::has_workflow_extension;
use crate::workflow::model::{Action, Branch, Workflow};
use serde_json::{json, Map};
use std::path::{Path, PathBuf};

/// Tool names the catalog may not take.
pub const RESERVED_NAMES: [&str; 3] = ["lobster_run", "lobster_resume", "lobster_workflows"];

/// Longest tool name (MCP clients commonly cap names at 64 characters).
pub const MAX_NAME_LEN: usize = 64;

/// One workflow of the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowEntry {
    /// Tool name: the workflow's `name` (else its file stem), sanitised to
    /// `[A-Za-z0-9_-]` and at most 64 characters.
    pub name: String,
    /// The workflow file (canonical).
    pub file: PathBuf,
    pub description: Option<String>,
    /// JSON Schema of the args: types, required, defaults, descriptions.
    pub args_schema: Item,
    /// Declared arg names, in order.
    pub arg_names: Vec<String>,
    /// `{step, kind: "approval"|"input", prompt}` per gate.
    pub gates: Vec<Item>,
    /// One line per host effect (shell lines, host processes, components,
    /// sub-workflows) and per `permissions:` block.
    pub capabilities: Vec<String>,
}

impl WorkflowEntry {
    /// `{name, file, description, args, gates, capabilities}` for `lobster_workflows`.
    pub fn to_json(&self) -> Item {
        self.to_json_as(false)
    }

    /// [`WorkflowEntry::to_json`]; toward a serve tenant (`tenant`) the
    /// file is its name only, never a path of the server.
    pub fn to_json_as(&self, tenant: bool) -> Item {
        let file = if tenant {
            self.file
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        } else {
            self.file.to_string_lossy()
        };
        json!({
            "name": self.name,
            "file": file,
            "description": self.description,
            "args": self.args_schema,
            "gates": self.gates,
            "capabilities": self.capabilities,
        })
    }

    /// Refuse args the workflow does not declare, naming them.
    pub fn check_arg_names(&self, given: Option<&Map<String, Item>>) -> Result<()> {
        let unknown: Vec<&str> = given
            .into_iter()
            .flat_map(|m| m.keys())
            .filter(|k| !self.arg_names.contains(k))
            .map(String::as_str)
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let takes = if self.arg_names.is_empty() {
            "no args".to_string()
        } else {
            format!("only {}", self.arg_names.join(", "))
        };
        Err(Error::parse(format!(
            "Workflow {} does not take {} {} (it takes {takes})",
            self.name,
            if unknown.len() == 1 { "arg" } else { "args" },
            unknown.join(", ")
        )))
    }
}

/// The workflows of the `--workflows` directories.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub entries: Vec<WorkflowEntry>,
}

impl Catalog {
    /// Load every workflow file (`*.lobster`, `*.yaml`, `*.yml`, `*.json`)
    /// directly inside each directory, sorted by file name.
    pub fn load(dirs: &[PathBuf]) -> Result<Catalog> {
        let mut entries: Vec<WorkflowEntry> = Vec::new();
        for dir in dirs {
            let listing = std::fs::read_dir(dir).map_err(|e| {
                Error::parse(format!(
                    "--workflows {}: cannot read the directory: {e}",
                    dir.display()
                ))
            })?;
            let mut files: Vec<PathBuf> = listing
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && has_workflow_extension(p))
                .collect();
            files.sort();
            for file in files {
                let entry = load_entry(&file)?;
                if RESERVED_NAMES.contains(&entry.name.as_str()) {
                    return Err(Error::parse(format!(
                        "{}: workflow name {} is reserved for a built-in tool",
                        file.display(),
                        entry.name
                    ))
                    .with_hint("rename the workflow (its `name:`)"));
                }
                if let Some(other) = entries.iter().find(|e| e.name == entry.name) {
                    return Err(Error::parse(format!(
                        "workflow tool name {} is used by both {} and {}",
                        entry.name,
                        other.file.display(),
                        entry.file.display()
                    ))
                    .with_hint("give one of them another `name:` (names are sanitised to [A-Za-z0-9_-], 64 characters)"));
                }
                entries.push(entry);
            }
        }
        Ok(Catalog { entries })
    }

    /// The entry with this tool name.
    pub fn get(&self, name: &str) -> Option<&WorkflowEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Every tool name.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// How a run's workflow `name` (as its journal names it) is shown to
    /// the tenant whose catalog this is and whose runs start in `workdir`:
    /// its catalog name, or its path beneath the workdir (a `workflowText`
    /// run's file), else the file's name alone — never a path on the
    /// server. A pipeline's text is shown as it is.
    pub fn shown_name(&self, workdir: &Path, name: &str) -> String {
        let path = Path::new(name);
        if !path.is_absolute() {
            // A tenant's journal names a catalog file relative to its catalog
            // directory (`app::journal`; catalog files lie directly in it), a
            // workflowText run's beneath the workdir.
            let catalog = (!workdir.join(path).is_file())
                .then(|| {
                    self.entries
                        .iter()
                        .find(|e| e.file.file_name() == Some(path.as_os_str()))
                })
                .flatten();
            return catalog.map_or_else(|| name.to_string(), |e| e.name.clone());
        }
        let real = path.canonicalize().ok();
        let same = |f: &Path| f == path || (real.is_some() && f.canonicalize().ok() == real);
        if let Some(e) = self.entries.iter().find(|e| same(&e.file)) {
            return e.name.clone();
        }
        let within = |p: &Path| {
            p.strip_prefix(workdir)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .map(|r| r.to_string_lossy().into_owned())
        };
        if let Some(r) = within(path).or_else(|| real.as_deref().and_then(within)) {
            return r;
        }
        path.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// `name` reduced to `[A-Za-z0-9_-]` (anything else becomes `_`), at most 64 characters.
pub fn sanitize_name(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_LEN)
        .collect()
}

fn load_entry(file: &Path) -> Result<WorkflowEntry> {
    let wf = crate::workflow::load_workflow(file, None)?;
    let raw = wf.name.clone().unwrap_or_else(|| {
        file.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let name = sanitize_name(&raw);
    if name.is_empty() {
        return Err(Error::parse(format!(
            "{}: the workflow needs a name for its tool",
            file.display()
        )));
    }
    let mut caps = Vec::new();
    if let Some(p) = &wf.permissions {
        caps.push(format!("within its permissions: {}", p.summary()));
    }
    let mut gates = Vec::new();
    for step in &wf.steps {
        if let Some(a) = &step.approval {
            gates.push(json!({
                "step": step.id,
                "kind": "approval",
                "prompt": a.prompt.clone().unwrap_or_else(|| "Approve?".into()),
            }));
        }
        if let Some(i) = &step.input {
            gates.push(json!({"step": step.id, "kind": "input", "prompt": i.prompt}));
        }
        let label = format!("step {}", step.id);
        if let Some(p) = &step.permissions {
            caps.push(format!("{label}: within its permissions: {}", p.summary()));
        }
        action_caps(&label, &step.action, &mut caps);
    }
    Ok(WorkflowEntry {
        name,
        file: file.canonicalize().unwrap_or_else(|_| file.to_path_buf()),
        description: wf.description.clone(),
        args_schema: args_schema(&wf),
        arg_names: wf.args.iter().map(|a| a.name.clone()).collect(),
        gates,
        capabilities: caps,
    })
}

/// What an action may do, without compiling or running anything.
fn action_caps(label: &str, action: &Action, out: &mut Vec<String>) {
    let registry = crate::commands::builtin();
    match action {
        Action::None => {}
        Action::Shell(_) => out.push(format!("{label}: runs a host shell command")),
        Action::Pipeline(text) => {
            let Ok(p) = crate::dsl::parse(text) else {
                out.push(format!("{label}: runs a pipeline"));
                return;
            };
            for stage in &p.stages {
                match registry.get(&stage.name).map(|c| c.signature()) {
                    Some(sig) if sig.side_effects.contains(&"local_exec") => {
                        out.push(format!("{label} ({}): runs host processes", stage.name))
                    }
                    Some(_) => {}
                    None => out.push(format!("{label} ({}): runs a WebAssembly step", stage.name)),
                }
            }
        }
        Action::Wasm { uses, .. } => {
            out.push(format!("{label}: runs the WebAssembly component {uses}"))
        }
        Action::Workflow { path, .. } => out.push(format!("{label}: runs the workflow {path}")),
        Action::Parallel(p) => branches_caps(label, &p.branches, out),
        Action::ForEach(f) => branches_caps(label, &f.steps, out),
    }
}

fn branches_caps(label: &str, branches: &[Branch], out: &mut Vec<String>) {
    for b in branches {
        action_caps(&format!("{label}/{}", b.id), &b.action, out);
    }
}

/// The workflow's `args:` as a JSON Schema object.
pub fn args_schema(wf: &Workflow) -> Item {
    let mut props = Map::new();
    let mut required = Vec::new();
    for def in &wf.args {
        let mut p = Map::new();
        if let Some(t) = def.ty {
            p.insert("type".into(), json!(t.name()));
        }
        if let Some(d) = &def.description {
            p.insert("description".into(), json!(d));
        }
        if let Some(d) = &def.default {
            p.insert("default".into(), d.clone());
        }
        props.insert(def.name.clone(), Item::Object(p));
        if def.required && def.default.is_none() {
            required.push(json!(def.name));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Item::Object(props));
    if !required.is_empty() {
        schema.insert("required".into(), Item::Array(required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    Item::Object(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn names_are_sanitised_and_capped() {
        assert_eq!(sanitize_name("inbox triage!"), "inbox_triage_");
        assert_eq!(sanitize_name(&"a".repeat(80)).len(), 64);
    }

    #[test]
    fn schema_gates_and_capabilities() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "greet.lobster",
            "name: greet people\ndescription: Say hello\nargs:\n  who:\n    type: string\n    required: true\n    description: Whom to greet\n  times:\n    type: integer\n    default: 1\nsteps:\n  - id: hello\n    run: echo hi\n    approval: Send it?\n",
        );
        let c = Catalog::load(&[dir.path().to_path_buf()]).unwrap();
        let e = c.get("greet_people").expect("sanitised name");
        assert_eq!(e.description.as_deref(), Some("Say hello"));
        assert_eq!(
            e.args_schema,
            json!({"type":"object","properties":{
                "who":{"type":"string","description":"Whom to greet"},
                "times":{"type":"integer","default":1}},
                "required":["who"],"additionalProperties":false})
        );
        assert_eq!(e.gates[0]["kind"], json!("approval"));
        assert_eq!(e.capabilities, ["step hello: runs a host shell command"]);
        let mut given = Map::new();
        given.insert("whom".into(), json!("x"));
        assert_eq!(
            e.check_arg_names(Some(&given)).unwrap_err().to_string(),
            "Workflow greet_people does not take arg whom (it takes only who, times)"
        );
    }

    #[test]
    fn collisions_and_reserved_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a.lobster",
            "name: same\nsteps:\n  - id: a\n    run: echo a\n",
        );
        write(
            dir.path(),
            "b.yaml",
            "name: same\nsteps:\n  - id: a\n    run: echo a\n",
        );
        let e = Catalog::load(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("workflow tool name same is used by both"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a.lobster",
            "name: lobster_run\nsteps:\n  - id: a\n    run: echo a\n",
        );
        let e = Catalog::load(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(
            e.to_string().ends_with("is reserved for a built-in tool"),
            "{e}"
        );
        let e = Catalog::load(&[dir.path().join("missing")]).unwrap_err();
        assert!(e.to_string().contains("cannot read the directory"), "{e}");
    }

    #[test]
    fn a_run_s_workflow_is_shown_by_catalog_name_or_beneath_the_workdir_never_a_server_path() {
        let cat = tempfile::tempdir().unwrap();
        write(
            cat.path(),
            "greet.lobster",
            "name: greet\nsteps:\n  - id: a\n    run: echo a\n",
        );
        let c = Catalog::load(&[cat.path().canonicalize().unwrap()]).unwrap();
        let work = tempfile::tempdir().unwrap();
        let work = work.path().canonicalize().unwrap();
        std::fs::create_dir(work.join("inline")).unwrap();
        write(&work, "inline/w1.lobster", "steps: []\n");
        let greet = cat.path().join("greet.lobster");
        // A catalog file, named absolutely or as the journal names it.
        assert_eq!(c.shown_name(&work, greet.to_str().unwrap()), "greet");
        assert_eq!(c.shown_name(&work, "greet.lobster"), "greet");
        // A workflowText run's file: its path beneath the workdir.
        let inline = work.join("inline/w1.lobster");
        assert_eq!(
            c.shown_name(&work, inline.to_str().unwrap()),
            "inline/w1.lobster"
        );
        assert_eq!(
            c.shown_name(&work, "inline/w1.lobster"),
            "inline/w1.lobster"
        );
        // Anything else of the server: the file's name alone.
        assert_eq!(c.shown_name(&work, "/etc/secret/wf.lobster"), "wf.lobster");
        // A pipeline's text as it is.
        assert_eq!(
            c.shown_name(&work, "exec --json 'a/b' | head"),
            "exec --json 'a/b' | head"
        );
    }
}
