//! Finding the component behind a pipeline stage name.
//!
//! The step path is, in order: directories given with `--steps DIR` (wired
//! by the CLI), then `LOBSTER_STEP_PATH` (colon-separated), then `./steps`.
//! In each directory a stage `inbox.list` matches `inbox.list.wasm`,
//! `inbox_list.wasm` or `inbox-list.wasm`; when no file name matches, every
//! `.wasm` on the path is matched by the name its `describe` returns, read
//! from a describe cache keyed by the component's blake3 (a component is
//! loaded only the first time it is seen, and then only the match is). Resolution (and blake3 hashing)
//! happens when the pipeline is planned, before any stage runs.
//!
//! **A run resolves each name once.** A resolver belongs to one run (its
//! admission carries the run's authority), and the first resolution of a
//! name pins it: a [`Pinned`] record of the file, the component loaded
//! from it (its digest) and the admission's verdict. Every later phase of
//! the run — validation, the policy walk, preflight, the plan digest,
//! execution — gets that pin without touching the file again, so they all
//! judge and run the same bytes: a file swapped after the first
//! resolution changes nothing in this run (the next run resolves it anew
//! and judges it then). The pin grants nothing by itself: what a stage may
//! do is still judged where it is used, by the run's authority.
//!
//! A name `oci://…` is a step in a registry: the resolver's [`Admission`]
//! fetches it into the local cache. Every component, found either way, is
//! judged by the admission before it is compiled.

use super::admission::Admission;
use super::cache::ArtifactCache;
use super::component::{digest_of, load_digested};
use super::error::SandboxError;
use super::file_memo::load_admitted;
use super::wasm_step::WasmStep;
use crate::state::write_atomic;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Directories searched for step components, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepPath {
    dirs: Vec<PathBuf>,
}

impl StepPath {
    /// Exactly these directories.
    pub fn new(dirs: Vec<PathBuf>) -> Self {
        StepPath { dirs }
    }

    /// `extra` (from `--steps`), then `LOBSTER_STEP_PATH`, then `cwd/steps`.
    /// Relative entries are taken relative to `cwd`.
    pub fn from_env(cwd: &Path, extra: &[PathBuf]) -> Self {
        let var = std::env::var("LOBSTER_STEP_PATH").ok();
        Self::from_parts(cwd, extra, var.as_deref())
    }

    /// As [`StepPath::from_env`] with an explicit `LOBSTER_STEP_PATH` value.
    pub fn from_parts(cwd: &Path, extra: &[PathBuf], step_path_var: Option<&str>) -> Self {
        let mut dirs: Vec<PathBuf> = extra.iter().map(|d| cwd.join(d)).collect();
        if let Some(var) = step_path_var {
            dirs.extend(
                var.split(':')
                    .filter(|s| !s.is_empty())
                    .map(|s| cwd.join(s)),
            );
        }
        dirs.push(cwd.join("steps"));
        let mut unique: Vec<PathBuf> = Vec::with_capacity(dirs.len());
        for d in dirs {
            if !unique.contains(&d) {
                unique.push(d);
            }
        }
        StepPath { dirs: unique }
    }

    /// The directories.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

/// Resolves stage names to [`WasmStep`]s, each name once: the first
/// resolution is pinned for the resolver's life (one run; see the module
/// docs). A new resolver over the same path reads the files again.
pub struct StepResolver {
    path: StepPath,
    cache: ArtifactCache,
    admission: Option<Arc<dyn Admission>>,
    pins: Mutex<HashMap<String, Pinned>>,
    uses_pins: Mutex<HashMap<(PathBuf, String, String), Pinned>>,
}

/// What a stage name resolved to the first time a run asked: the rest of
/// the run uses this record instead of resolving the name again.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// The component file (for a registry step, its file in the cache).
    pub path: PathBuf,
    /// The step, holding the component compiled from exactly the bytes
    /// whose digest was taken and admitted.
    pub step: &'static WasmStep,
    /// What the run's admission said about those bytes.
    pub trust: Trust,
}

impl Pinned {
    /// blake3 of the pinned component.
    pub fn digest(&self) -> &str {
        self.step.digest()
    }
}

/// The admission's verdict on a pinned component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The run's admission judged the bytes (registry, cache, signature)
    /// and let them in; a refused component is never pinned.
    Admitted,
    /// The resolver has no admission (tools that only list or describe
    /// steps); nothing was judged.
    Unjudged,
}

impl std::fmt::Debug for StepResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepResolver")
            .field("path", &self.path)
            .field("cache", &self.cache)
            .field("admission", &self.admission.is_some())
            .finish_non_exhaustive()
    }
}

/// Whether `name` can name a step file (no path separators, no leading dot).
fn plausible(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl StepResolver {
    /// Search `path`, caching compiled artefacts in `cache`.
    pub fn new(path: StepPath, cache: ArtifactCache) -> Self {
        StepResolver {
            path,
            cache,
            admission: None,
            pins: Mutex::new(HashMap::new()),
            uses_pins: Mutex::new(HashMap::new()),
        }
    }

    /// Judge every component with `admission` before compiling it, and
    /// fetch `oci://` names through it.
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Self {
        self.admission = Some(admission);
        self
    }

    /// The admission, if any.
    pub fn admission(&self) -> Option<&Arc<dyn Admission>> {
        self.admission.as_ref()
    }

    /// Load the component `name` resolved to at `path`, admitted first.
    fn load(&self, name: &str, path: &Path) -> Result<Arc<super::LoadedComponent>, SandboxError> {
        let admission = self.admission.as_deref().map(|a| (name, a));
        load_admitted(path, &self.cache, admission)
    }

    /// The step path.
    pub fn path(&self) -> &StepPath {
        &self.path
    }

    /// The compiled-artefact cache.
    pub fn cache(&self) -> &ArtifactCache {
        &self.cache
    }

    /// The component a workflow's `uses:` names: an `oci://` reference
    /// (fetched by the admission) or a file relative to `base`; admitted
    /// before it is compiled. Returns the file and the component.
    pub fn load_uses(
        &self,
        uses: &str,
        base: &Path,
    ) -> Result<(PathBuf, Arc<super::LoadedComponent>), SandboxError> {
        let path = match self.admission.as_ref().and_then(|a| a.fetch(uses)) {
            Some(fetched) => fetched?,
            None => base.join(uses),
        };
        let component = self.load(uses, &path)?;
        Ok((path, component))
    }

    /// File names tried for `name`, in order.
    pub fn file_names(name: &str) -> Vec<String> {
        let mut names = vec![format!("{name}.wasm")];
        for alt in [name.replace('.', "_"), name.replace('.', "-")] {
            let f = format!("{alt}.wasm");
            if !names.contains(&f) {
                names.push(f);
            }
        }
        names
    }

    /// The step called `name`, or `None` when nothing on the path matches.
    /// The wasm engine is only started when a candidate file exists. The
    /// first success pins the name ([`Pinned`]): later calls return the
    /// pinned step without opening anything.
    pub fn resolve(&self, name: &str) -> Result<Option<&'static WasmStep>, SandboxError> {
        let pinned = self
            .pins
            .lock()
            .ok()
            .and_then(|m| m.get(name).map(|p| p.step));
        if let Some(step) = pinned {
            return Ok(Some(step));
        }
        let found = match self.admission.as_ref().and_then(|a| a.fetch(name)) {
            Some(fetched) => {
                let path = fetched?;
                let component = self.load(name, &path)?;
                Some((path, component))
            }
            None if !plausible(name) => None,
            None => match self.by_file_name(name)? {
                Some(found) => Some(found),
                None => self.by_described_name(name),
            },
        };
        let Some((path, component)) = found else {
            return Ok(None);
        };
        let step = WasmStep::intern(name, path.clone(), component);
        Ok(Some(self.pin(name, path, step).step))
    }

    /// [`StepResolver::resolve`], as the pin: the file it came from (the
    /// interned step's own path may be another run's file with the same
    /// name and digest), the digest and the verdict.
    pub fn resolve_pinned(&self, name: &str) -> Result<Option<Pinned>, SandboxError> {
        Ok(match self.resolve(name)? {
            Some(_) => self.pinned(name),
            None => None,
        })
    }

    /// The pin of `name` in this run, if it was resolved already.
    pub fn pinned(&self, name: &str) -> Option<Pinned> {
        self.pins.lock().ok()?.get(name).cloned()
    }

    /// Pin `name` to `step`, unless another thread of the run pinned it
    /// first: then that pin stands (and is returned), so every phase of a
    /// run sees one component per name.
    fn pin(&self, name: &str, path: PathBuf, step: &'static WasmStep) -> Pinned {
        let pin = Pinned {
            path,
            step,
            trust: self.trust(),
        };
        match self.pins.lock() {
            Ok(mut pins) => pins.entry(name.to_string()).or_insert(pin).clone(),
            Err(_) => pin,
        }
    }

    fn by_file_name(
        &self,
        name: &str,
    ) -> Result<Option<(PathBuf, std::sync::Arc<super::LoadedComponent>)>, SandboxError> {
        for dir in &self.path.dirs {
            for file in Self::file_names(name) {
                let path = dir.join(&file);
                if path.is_file() {
                    let component = self.load(name, &path)?;
                    return Ok(Some((path, component)));
                }
            }
        }
        Ok(None)
    }

    fn by_described_name(
        &self,
        name: &str,
    ) -> Option<(PathBuf, std::sync::Arc<super::LoadedComponent>)> {
        for dir in &self.path.dirs {
            let files = super::survey::wasm_files(dir);
            for path in files {
                // Components that fail to load are not this step; they are
                // reported when named directly.
                let Ok(bytes) = std::fs::read(&path) else {
                    continue;
                };
                let digest = digest_of(&bytes);
                // A component the admission refuses is never compiled just
                // to learn its name.
                if let Some(a) = &self.admission {
                    if a.admit(name, &path, &digest, &mut || Ok(bytes.clone()))
                        .is_err()
                    {
                        continue;
                    }
                }
                if self.described_name(&bytes, &digest, &path).as_deref() != Some(name) {
                    continue;
                }
                let Ok(component) = load_digested(&bytes, digest, &path, &self.cache) else {
                    continue;
                };
                if component.meta().is_some_and(|m| m.name == name) {
                    return Some((path, component));
                }
            }
        }
        None
    }

    /// The name `describe` returns for component `bytes`, from the
    /// describe cache (`<cache dir>/<blake3>.name`) when it is there, so a
    /// mistyped stage name does not compile every component on the path;
    /// otherwise the component is loaded (compiled or from the artefact
    /// cache) and its name recorded. `None` for components that fail to
    /// load; `Some("")` for plain commands, which have no name.
    fn described_name(&self, bytes: &[u8], digest: &str, path: &Path) -> Option<String> {
        let record = self.cache.dir().map(|d| d.join(format!("{digest}.name")));
        if let Some(text) = record
            .as_ref()
            .and_then(|r| std::fs::read_to_string(r).ok())
        {
            return Some(text);
        }
        let component = load_digested(bytes, digest.to_string(), path, &self.cache).ok()?;
        remember_name(&self.cache, &component);
        Some(component.meta().map(|m| m.name.clone()).unwrap_or_default())
    }

    /// The pin of step `id`'s `uses: USES` in the workflow file
    /// `workflow`, if this run loaded it already (`workflow::steps::wasm`
    /// loads it, pins it with [`StepResolver::pin_uses`], and judges its
    /// imports at every use). The step id is part of the key because a
    /// plain command component takes its step's id as its name.
    pub fn pinned_uses(&self, workflow: &Path, id: &str, uses: &str) -> Option<Pinned> {
        let key = (workflow.to_path_buf(), id.to_string(), uses.to_string());
        self.uses_pins.lock().ok()?.get(&key).cloned()
    }

    /// Pin step `id`'s `uses` in `workflow` to `step` loaded from `path` (admitted by
    /// this resolver's admission), unless it is pinned already: then that
    /// pin stands and is returned.
    pub fn pin_uses(
        &self,
        workflow: &Path,
        id: &str,
        uses: &str,
        path: PathBuf,
        step: &'static WasmStep,
    ) -> Pinned {
        let pin = Pinned {
            path,
            step,
            trust: self.trust(),
        };
        let key = (workflow.to_path_buf(), id.to_string(), uses.to_string());
        match self.uses_pins.lock() {
            Ok(mut pins) => pins.entry(key).or_insert(pin).clone(),
            Err(_) => pin,
        }
    }

    fn trust(&self) -> Trust {
        if self.admission.is_some() {
            Trust::Admitted
        } else {
            Trust::Unjudged
        }
    }

    /// Every name resolved (pinned) so far, with its pin, by name.
    pub fn resolved(&self) -> Vec<(String, Pinned)> {
        let mut v: Vec<(String, Pinned)> = self
            .pins
            .lock()
            .map(|m| m.iter().map(|(k, pin)| (k.clone(), pin.clone())).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

impl crate::kernel::StepSource for StepResolver {
    fn resolve(&self, name: &str) -> crate::error::Result<Option<&dyn crate::kernel::Command>> {
        Ok(StepResolver::resolve(self, name)?.map(|s| s as &dyn crate::kernel::Command))
    }

    fn dirs(&self) -> &[PathBuf] {
        self.path.dirs()
    }

    fn names(&self) -> Vec<String> {
        super::survey::list_steps(self)
            .into_iter()
            .filter(|found| found.loaded.is_ok())
            .map(|found| found.name())
            .collect()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The step resolver of `registry`, when its steps come from the step path.
pub fn resolver_of(registry: &crate::kernel::Registry) -> Option<&StepResolver> {
    registry.steps()?.as_any().downcast_ref::<StepResolver>()
}

/// Record in the describe cache (`<cache dir>/<blake3>.name`) the name
/// `component`'s `describe` returns (empty for plain commands). Failing to
/// is not fatal: the next resolution loads the component again.
pub fn remember_name(cache: &ArtifactCache, component: &super::LoadedComponent) {
    let Some(dir) = cache.dir() else { return };
    let name = component.meta().map(|m| m.name.clone()).unwrap_or_default();
    let record = dir.join(format!("{}.name", component.digest()));
    let _ = std::fs::create_dir_all(dir).and_then(|_| write_atomic(&record, name.as_bytes()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_path_order_and_file_names() {
        let cwd = Path::new("/w");
        let p = StepPath::from_parts(cwd, &[PathBuf::from("mine")], Some("a:/abs/b::a"));
        assert_eq!(
            p.dirs(),
            [
                PathBuf::from("/w/mine"),
                PathBuf::from("/w/a"),
                PathBuf::from("/abs/b"),
                PathBuf::from("/w/steps")
            ]
        );
        assert_eq!(
            StepResolver::file_names("inbox.list"),
            ["inbox.list.wasm", "inbox_list.wasm", "inbox-list.wasm"]
        );
        assert!(!plausible("../x"));
        assert!(!plausible("a/b"));
        assert!(plausible("inbox.list"));
    }

    #[test]
    fn missing_dirs_resolve_nothing_without_starting_the_engine() {
        let tmp = tempfile::tempdir().unwrap();
        let r = StepResolver::new(
            StepPath::new(vec![tmp.path().join("nope")]),
            ArtifactCache::disabled(),
        );
        assert!(r.resolve("whatever").unwrap().is_none());
    }
}
