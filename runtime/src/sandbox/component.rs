//! A loaded component: its blake3 digest, its kind (a `lobster:step`
//! world or a plain `wasi:cli/command`), a reusable `InstancePre`, and for
//! steps the result of `describe`. Loaded once per digest per process.

use super::bindings::StepPre;
use super::cache::{ArtifactCache, CacheOutcome};
use super::command_step;
use super::component_step;
use super::describe::StepMeta;
use super::engine::{engine, SandboxEngine};
use super::env::StepEnv;
use super::error::SandboxError;
use super::host::HostState;
use crate::journal::GuestDigests;
use crate::kernel::EffectiveLimits;
use crate::value::Item;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::Component;
use wasmtime_wasi::p2::bindings::sync::CommandPre;

/// What interface a component implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentKind {
    /// Exports `describe` and `run` of `lobster:step` (0.1.x or 0.2.x; see
    /// [`LoadedComponent::world_version`]).
    Step,
    /// A plain `wasi:cli/command` (JSON on stdin/stdout).
    Command,
}

pub(crate) enum Pre {
    Step(StepPre<HostState>),
    /// `lobster:step@0.2.0` (may import `broker`).
    Step02(super::bindings::v02::StepPre<HostState>),
    Command(CommandPre<HostState>),
}

/// A compiled, linked component ready to instantiate.
pub struct LoadedComponent {
    digest: String,
    kind: ComponentKind,
    source: PathBuf,
    pre: Pre,
    meta: Option<StepMeta>,
    cache: CacheOutcome,
    imports: Vec<String>,
}

/// Limits for `describe`: it must be cheap.
const DESCRIBE_LIMITS: EffectiveLimits = EffectiveLimits {
    fuel: 1_000_000_000,
    memory_bytes: 64 << 20,
    timeout: Some(Duration::from_secs(5)),
    output_bytes: 64 * 1024,
};

fn loaded() -> &'static Mutex<HashMap<String, Arc<LoadedComponent>>> {
    static LOADED: OnceLock<Mutex<HashMap<String, Arc<LoadedComponent>>>> = OnceLock::new();
    LOADED.get_or_init(Default::default)
}

/// The blake3 digest (64 hex digits) of component bytes.
pub fn digest_of(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Read, hash and load the component at `path` (cached per digest). A file
/// whose stamp (device, inode, size, times) is unchanged since it was last
/// loaded in this process is not read again ([`super::file_memo`]).
pub fn load_file(path: &Path, cache: &ArtifactCache) -> Result<Arc<LoadedComponent>, SandboxError> {
    super::file_memo::load(path, cache)
}

/// Load component `bytes` read from `source` (cached per digest).
pub fn load_bytes(
    bytes: &[u8],
    source: &Path,
    cache: &ArtifactCache,
) -> Result<Arc<LoadedComponent>, SandboxError> {
    load_digested(bytes, digest_of(bytes), source, cache)
}

/// [`load_bytes`] for bytes whose blake3 `digest` the caller computed.
pub(crate) fn load_digested(
    bytes: &[u8],
    digest: String,
    source: &Path,
    cache: &ArtifactCache,
) -> Result<Arc<LoadedComponent>, SandboxError> {
    if let Some(hit) = loaded().lock().ok().and_then(|m| m.get(&digest).cloned()) {
        return Ok(hit);
    }
    let engine = engine()?;
    let (component, outcome) = cache.load(engine, bytes, &digest, source)?;
    let loaded_component = Arc::new(LoadedComponent::link(
        engine,
        component,
        digest.clone(),
        source,
        outcome,
    )?);
    if let Ok(mut m) = loaded().lock() {
        m.insert(digest, loaded_component.clone());
    }
    Ok(loaded_component)
}

pub(crate) fn kind_of(engine: &SandboxEngine, component: &Component) -> Option<ComponentKind> {
    let ty = component.component_type();
    let mut describe = false;
    let mut run = false;
    let mut cli_run = false;
    for (name, item) in ty.exports(engine.engine()) {
        match (name, item.ty) {
            ("describe", ComponentItem::ComponentFunc(_)) => describe = true,
            ("run", ComponentItem::ComponentFunc(_)) => run = true,
            (n, ComponentItem::ComponentInstance(_)) if n.starts_with("wasi:cli/run@0.2") => {
                cli_run = true
            }
            _ => {}
        }
    }
    if describe && run {
        Some(ComponentKind::Step)
    } else if cli_run {
        Some(ComponentKind::Command)
    } else {
        None
    }
}

/// Whether a step component implements `lobster:step@0.2.x`: it imports an
/// interface of that version, or its `describe` returns the 0.2 capability
/// variant (which has a `tool` case).
pub(crate) fn is_v02(engine: &SandboxEngine, component: &Component) -> bool {
    use wasmtime::component::types::Type;
    let ty = component.component_type();
    if ty
        .imports(engine.engine())
        .any(|(name, _)| name.starts_with("lobster:step/") && name.contains("@0.2."))
    {
        return true;
    }
    let Some(ComponentItem::ComponentFunc(describe)) = ty
        .exports(engine.engine())
        .find(|(name, _)| *name == "describe")
        .map(|(_, item)| item.ty)
    else {
        return false;
    };
    let results: Vec<Type> = describe.results().collect();
    results.iter().any(|result| {
        let Type::Record(info) = result else {
            return false;
        };
        let fields: Vec<_> = info.fields().map(|f| f.ty.clone()).collect();
        fields.iter().any(|ty| match ty {
            Type::List(list) => match list.ty() {
                Type::Variant(v) => {
                    let has_tool = v.cases().any(|c| c.name == "tool");
                    has_tool
                }
                _ => false,
            },
            _ => false,
        })
    })
}

impl LoadedComponent {
    fn link(
        engine: &SandboxEngine,
        component: Component,
        digest: String,
        source: &Path,
        cache: CacheOutcome,
    ) -> Result<Self, SandboxError> {
        let bad = |detail: String| SandboxError::BadComponent {
            path: source.to_path_buf(),
            detail,
        };
        let kind = kind_of(engine, &component).ok_or_else(|| {
            bad("exports neither lobster:step (describe, run) nor wasi:cli/run".into())
        })?;
        let pre = engine.linker().instantiate_pre(&component).map_err(|e| {
            bad(format!(
                "cannot be linked (it imports something Lobster does not provide): {e:#}"
            ))
        })?;
        let pre = match kind {
            ComponentKind::Step if is_v02(engine, &component) => Pre::Step02(
                super::bindings::v02::StepPre::new(pre).map_err(|e| bad(format!("{e:#}")))?,
            ),
            ComponentKind::Step => Pre::Step(StepPre::new(pre).map_err(|e| bad(format!("{e:#}")))?),
            ComponentKind::Command => {
                Pre::Command(CommandPre::new(pre).map_err(|e| bad(format!("{e:#}")))?)
            }
        };
        let imports = component
            .component_type()
            .imports(engine.engine())
            .map(|(name, _)| name.to_string())
            .collect();
        let mut me = LoadedComponent {
            digest,
            kind,
            source: source.to_path_buf(),
            pre,
            meta: None,
            cache,
            imports,
        };
        if kind == ComponentKind::Step {
            let label = source
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("step")
                .to_string();
            let info = component_step::describe(engine, &me, &label, &DESCRIBE_LIMITS)
                .map_err(|e| bad(format!("describe failed: {e}")))?;
            if info.name.trim().is_empty() {
                return Err(bad("describe returned an empty name".into()));
            }
            info.check_size().map_err(bad)?;
            me.meta = Some(info);
        }
        Ok(me)
    }

    /// blake3 of the component bytes (64 hex digits).
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Step world or plain command.
    pub fn kind(&self) -> ComponentKind {
        self.kind
    }

    /// The file it was loaded from (first load wins for identical bytes).
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// `describe`'s answer (steps only).
    pub fn meta(&self) -> Option<&StepMeta> {
        self.meta.as_ref()
    }

    /// Every interface the component imports (see [`super::inspect`]).
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// `"0.1"` or `"0.2"` for `lobster:step` components, `None` for commands.
    pub fn world_version(&self) -> Option<&'static str> {
        match self.pre {
            Pre::Step(_) => Some("0.1"),
            Pre::Step02(_) => Some("0.2"),
            Pre::Command(_) => None,
        }
    }

    /// Whether the compiled code came from the cache.
    pub fn cache_outcome(&self) -> &CacheOutcome {
        &self.cache
    }

    pub(crate) fn pre(&self) -> &Pre {
        &self.pre
    }

    /// Run the component as step `name`: instantiate a fresh instance in a
    /// fresh store, pass `args` and `input`, return the output items.
    pub fn run(
        &self,
        name: &str,
        args: &[String],
        input: &[Item],
        env: &StepEnv,
        limits: &EffectiveLimits,
    ) -> Result<Vec<Item>, SandboxError> {
        self.run_digested(name, args, input, env, limits, None)
    }

    /// [`LoadedComponent::run`], and with `digests` (a run whose journal is
    /// on) the blake3 of the exact text handed to the guest and of the
    /// exact text it handed back (the journal's digest rule 2). Without
    /// `digests` nothing is hashed.
    pub fn run_digested(
        &self,
        name: &str,
        args: &[String],
        input: &[Item],
        env: &StepEnv,
        limits: &EffectiveLimits,
        digests: Option<&mut GuestDigests>,
    ) -> Result<Vec<Item>, SandboxError> {
        let engine = engine()?;
        let _tick = engine.ticking();
        match &self.pre {
            Pre::Step(pre) => {
                component_step::run(engine, pre, name, args, input, env, limits, digests)
            }
            Pre::Step02(pre) => {
                component_step::run_v02(engine, pre, name, args, input, env, limits, digests)
            }
            Pre::Command(pre) => {
                command_step::run(engine, pre, name, args, input, env, limits, digests)
            }
        }
    }
}
