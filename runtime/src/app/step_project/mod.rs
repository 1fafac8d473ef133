//! Step projects in Rust, Python or JavaScript/TypeScript, for `lobster
//! step new|build|test`.
//!
//! A step project is a directory with `lobster-step.toml` (`name`, `lang`,
//! `entry`, `wasm`: where the build writes the component) and
//! `examples.json` (declared examples: args and input items → expected
//! items). [`create`] writes a new one from the language's [`templates`];
//! [`build::build`] runs the language's pinned toolchain and reads back the
//! component's name, size, world and digest; [`test::test`] runs every
//! example in the sandbox, so every language tests the same way. The door
//! parses the flags and prints what these return.

pub mod build;
pub mod templates;
pub mod test;

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The Lobster checkout's `guest-sdk/` this binary was built from.
pub const BUILT_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../guest-sdk");

/// The project's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `lobster-guest` crate, cargo.
    Rust,
    /// `lobster_step` package, componentize-py.
    Python,
    /// `lobster-step` package, esbuild + componentize-qjs.
    Js,
}

impl Lang {
    /// The name `--lang` and `lobster-step.toml` use.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }

    /// The language `--lang` or `lang =` names (`py`, `ts`, … too).
    pub fn parse(s: &str) -> Result<Lang> {
        match s {
            "rust" => Ok(Lang::Rust),
            "python" | "py" => Ok(Lang::Python),
            "js" | "ts" | "javascript" | "typescript" => Ok(Lang::Js),
            other => Err(Error::parse(format!(
                "--lang must be rust, python or js, got {other:?}"
            ))),
        }
    }
}

/// `lobster-step.toml`.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Manifest {
    /// The step's name (as `describe` returns it).
    pub name: String,
    /// `rust`, `python` or `js`.
    pub lang: String,
    /// The source entry (Python module file or JS/TS file).
    #[serde(default)]
    pub entry: Option<String>,
    /// Where the build writes the component, relative to the project.
    pub wasm: String,
}

/// Read `DIR/lobster-step.toml`.
pub fn manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("lobster-step.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Error::runtime(format!(
            "{}: {e} (create a project with `lobster step new NAME --lang rust|python|js`)",
            path.display()
        ))
    })?;
    toml::from_str(&text).map_err(|e| Error::parse(format!("{}: {e}", path.display())))
}

/// Whether `name` can name a step: letters, digits, `.`, `-` and `_`,
/// starting with a letter.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || !name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return Err(Error::parse(format!(
            "step name {name:?}: use letters, digits, '.', '-' and '_', starting with a letter (e.g. inbox.tag)"
        )));
    }
    Ok(())
}

/// A project [`create`] wrote.
#[derive(Debug, Clone)]
pub struct Created {
    /// Its directory.
    pub dir: PathBuf,
    /// The files written, relative to `dir`, in order.
    pub files: Vec<String>,
}

/// Write a new project for step `name` (checked with [`check_name`]) in
/// `lang`, in `dir` (default: the name with dots as dashes), which must not
/// exist; its Rust crate or package points at `sdk` (default
/// [`BUILT_SDK`]).
pub fn create(
    name: &str,
    lang: Lang,
    dir: Option<PathBuf>,
    sdk: Option<PathBuf>,
) -> Result<Created> {
    let slug = name.replace('.', "-");
    let dir = dir.unwrap_or_else(|| PathBuf::from(&slug));
    if dir.exists() {
        return Err(Error::runtime(format!(
            "{}: already exists; choose another NAME or --dir",
            dir.display()
        )));
    }
    let sdk = match sdk {
        Some(s) => s,
        None => PathBuf::from(BUILT_SDK),
    };
    let sdk = std::fs::canonicalize(&sdk).map_err(|e| {
        Error::runtime(format!(
            "{}: {e}; pass --sdk PATH/TO/lobster/guest-sdk",
            sdk.display()
        ))
    })?;
    let files = templates::files(lang, name, &slug, &sdk);
    std::fs::create_dir_all(&dir).map_err(|e| Error::runtime(format!("{}: {e}", dir.display())))?;
    for (rel, text) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::runtime(format!("{}: {e}", parent.display())))?;
        }
        // Source files for the author: the usual mode under their umask
        // (0644 under 022), not the state directory's 0600.
        std::fs::write(&path, text.as_bytes())
            .map_err(|e| Error::runtime(format!("{}: {e}", path.display())))?;
    }
    Ok(Created {
        dir,
        files: files.into_iter().map(|(rel, _)| rel).collect(),
    })
}

/// Where the built component is: `wasm` in the manifest, or for a Rust
/// project built with `CARGO_TARGET_DIR` set, the same file name there.
pub fn wasm_path(dir: &Path, m: &Manifest) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty());
    match (m.lang.as_str(), target, Path::new(&m.wasm).file_name()) {
        ("rust", Some(t), Some(file)) => dir
            .join(PathBuf::from(t))
            .join("wasm32-wasip2")
            .join("release")
            .join(file),
        _ => dir.join(&m.wasm),
    }
}
