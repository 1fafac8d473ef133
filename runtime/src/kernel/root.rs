//! The roots a run's files come from, and the one place that confines a
//! path to them.
//!
//! A run has a working root (its working directory: `lobster serve` gives
//! each tenant its own, `workdir` in its table) and, for a serve tenant,
//! read-only roots the operator chose (its catalog and step directories).
//! A path the workflow author names — a sub-workflow, a `uses:` component,
//! a `cwd:`, a granted directory — is taken relative to the root it is
//! written under and opened beneath that root's directory handle with
//! `cap-std`: `..` above the root, an absolute path and a symlink leading
//! out are refused by the open itself, so a link swapped in between a
//! check and a use cannot lead out (the file read is the one the handle
//! opened). Nothing here compares canonical prefixes.
//!
//! Toward a tenant ([`Confinement::tenant`]) a refusal names the path as
//! the author wrote it (relative to the root), and a path that is missing
//! and one that leads outside get the same answer, so a templated path is
//! no oracle for the server's files. The operator's own CLI keeps "not
//! found" and "outside".

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The roots beyond the working directory, and who the run answers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Directories the run may read files from besides its working
    /// directory (a tenant's catalog and step directories), canonical.
    pub read_only: Vec<PathBuf>,
    /// The run is a `lobster serve` tenant's: every file it names is
    /// confined to its roots whatever its trust, and refusals are answered
    /// as [`Refused::toward_tenant`] words them.
    pub tenant: bool,
}

/// A serve tenant's roots: its working directory (created at start,
/// canonical) and its [`Confinement`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRoot {
    /// Where the tenant's runs start: its policy's `roots` resolve here,
    /// and its inline workflows are kept here.
    pub workdir: PathBuf,
    /// Its read-only roots, and `tenant: true`.
    pub confinement: Confinement,
}

/// Why a path was not opened.
#[derive(Debug)]
pub enum Refused {
    /// Nothing is there.
    Missing,
    /// It is absolute, or leads (by `..` or a symlink) out of every root.
    Outside,
    /// It is there but is not what was asked for (a directory for a file).
    WrongKind,
    /// Reading it failed.
    Unreadable(io::Error),
}

impl Refused {
    /// The answer a tenant gets: one sentence for missing, outside and
    /// unreadable alike (completing "workflow file x.lobster …").
    pub fn toward_tenant(&self) -> &'static str {
        "was not found among this tenant's files"
    }
}

/// A file opened beneath a root.
#[derive(Debug)]
pub struct Opened {
    /// The open file (read it, not the path).
    pub file: std::fs::File,
    /// Where it really is (the handle's path).
    pub path: PathBuf,
    /// The root it was opened beneath.
    pub root: PathBuf,
}

impl Opened {
    /// The file's path relative to its root (how a tenant is shown it).
    pub fn relative(&self) -> String {
        relative_to(&self.path, &self.root)
    }
}

/// `path` relative to `root` when below it (else its file name).
pub fn relative_to(path: &Path, root: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

fn open_root(root: &Path) -> io::Result<Dir> {
    Dir::open_ambient_dir(root, ambient_authority())
}

/// Whether `e` is cap-std's refusal of a path leading out of its root.
fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
        && e.to_string().contains("outside of the filesystem")
}

fn refused(e: io::Error) -> Refused {
    if is_escape(&e) {
        Refused::Outside
    } else if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) {
        Refused::Missing
    } else {
        Refused::Unreadable(e)
    }
}

/// Where a handle really is (`/proc/self/fd`), `None` where that cannot be read.
fn real_path(fd: &impl std::os::fd::AsRawFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

/// `full` (absolute, as joined from a root-relative base and what the
/// author wrote) below `root` lexically: the rest, `..` left for the open.
fn below(full: &Path, root: &Path) -> Option<PathBuf> {
    let rest = full.strip_prefix(root).ok()?;
    if rest
        .components()
        .any(|c| matches!(c, Component::RootDir | Component::Prefix(_)))
    {
        return None;
    }
    Some(if rest.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rest.to_path_buf()
    })
}

/// Open the regular file at `full` beneath the first of `roots` it is
/// written under. `full` must be absolute; its part below the root may
/// hold `..` and symlinks, which are followed only while they stay inside.
pub fn open_file(roots: &[&Path], full: &Path) -> Result<Opened, Refused> {
    let mut answer = Refused::Outside;
    for root in roots {
        let Some(rel) = below(full, root) else {
            continue;
        };
        let dir = open_root(root).map_err(Refused::Unreadable)?;
        match dir.open(&rel) {
            Ok(f) => {
                let file = f.into_std();
                let meta = file.metadata().map_err(Refused::Unreadable)?;
                if !meta.is_file() {
                    return Err(Refused::WrongKind);
                }
                let path = real_path(&file).unwrap_or_else(|| root.join(&rel));
                return Ok(Opened {
                    file,
                    path,
                    root: root.to_path_buf(),
                });
            }
            Err(e) => answer = refused(e),
        }
    }
    Err(answer)
}

/// Open the directory at `rel` beneath `root` and return where it really
/// is, with the handle (keep it open while the path is used; see
/// [`OpenDir::handle_path`]).
pub fn open_dir(root: &Path, rel: &Path) -> Result<OpenDir, Refused> {
    if rel.is_absolute() {
        return Err(Refused::Outside);
    }
    let dir = open_root(root).map_err(Refused::Unreadable)?;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let sub = match dir.open_dir(rel) {
        Ok(sub) => sub,
        // ENOTDIR: a file is in the way, either at the end (there, but not
        // a directory) or on the way (nothing there); asked beneath the
        // root, through the same handle.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(match dir.open(rel) {
                Ok(_) => Refused::WrongKind,
                Err(e) => refused(e),
            });
        }
        Err(e) => return Err(refused(e)),
    };
    let path = real_path(&sub).unwrap_or_else(|| root.join(rel));
    Ok(OpenDir { dir: sub, path })
}

/// A directory opened beneath a root.
#[derive(Debug)]
pub struct OpenDir {
    dir: Dir,
    /// Where it really is.
    pub path: PathBuf,
}

impl OpenDir {
    /// A path that names exactly this open directory for as long as the
    /// handle lives (`/proc/self/fd/N`), for APIs that open by path (a
    /// WASI preopen): a link swapped in after the check is not followed.
    pub fn handle_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd()))
    }
}

/// Whether the existing part of `rel` (relative to `root`) stays inside
/// it: the deepest existing ancestor is opened beneath `root` (a missing
/// tail cannot lead anywhere yet). `rel` must hold no `..`.
pub fn existing_part_inside(root: &Path, rel: &Path) -> bool {
    let Ok(dir) = open_root(root) else {
        return false;
    };
    for a in rel.ancestors() {
        let a = if a.as_os_str().is_empty() {
            Path::new(".")
        } else {
            a
        };
        match dir.open_dir(a) {
            Ok(_) => return true,
            Err(e) if is_escape(&e) => return false,
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                // A file (or a link to one) beneath the root.
                return dir.open(a).is_ok();
            }
            Err(_) => continue,
        }
    }
    true
}

/// [`super::Authority::shown`] of `path` under the first of `roots` it lies
/// beneath, by bytes, when the path and every root are written plainly
/// ([`plain`]): then a byte prefix ending at a `/` is exactly a component
/// prefix, and the walk over components (most of what a journal's start
/// record cost) is not needed. `None`: not plain, or under none of them —
/// the caller answers by components.
pub fn shown_plainly<'r>(path: &Path, roots: impl Iterator<Item = &'r PathBuf>) -> Option<String> {
    let p = path.to_str()?;
    if !plain(p) {
        return None;
    }
    for root in roots {
        let r = root.to_str()?;
        if !plain(r) {
            return None;
        }
        let rest = match r {
            "/" => &p[1..],
            _ => match p.strip_prefix(r) {
                Some("") => "",
                Some(rest) if rest.starts_with('/') => &rest[1..],
                _ => continue,
            },
        };
        return Some(if rest.is_empty() {
            ".".into()
        } else {
            rest.into()
        });
    }
    None
}

/// Whether `p` is absolute and written plainly: no empty (`//`), `.`-led
/// (so no `.` or `..`) component and no trailing `/`.
fn plain(p: &str) -> bool {
    let b = p.as_bytes();
    b.first() == Some(&b'/')
        && (b.len() == 1 || b.last() != Some(&b'/'))
        && !b
            .windows(2)
            .any(|w| w[0] == b'/' && (w[1] == b'/' || w[1] == b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte path answers as the component walk does: a path beneath
    /// one of the roots, beside it, equal to it, and every non-plain
    /// spelling (which the walk answers).
    #[test]
    fn shown_plainly_agrees_with_the_components() {
        let by_components = |path: &Path, roots: &[PathBuf]| {
            roots
                .iter()
                .find(|r| path.starts_with(r))
                .map(|r| relative_to(path, r))
        };
        let roots_sets: Vec<Vec<PathBuf>> = vec![
            vec!["/srv/t/work".into(), "/srv/t/catalog".into()],
            vec!["/srv/t/work".into(), "/".into()],
            vec!["/srv/t/work/".into()],
            vec!["/srv/./t".into()],
            vec!["/srv/t".into(), "/srv/t/work".into()],
        ];
        let paths = [
            "/srv/t/work",
            "/srv/t/work/a.lobster",
            "/srv/t/workx/a",
            "/srv/t/wor",
            "/srv/t/catalog/wf/b.lobster",
            "/srv/t/work/../x",
            "/srv/t/work//a",
            "/srv/t/work/./a",
            "/srv/t/work/a/",
            "/srv/t/work/.hidden",
            "/elsewhere/c",
            "relative/d",
            "/",
        ];
        for roots in &roots_sets {
            for p in paths {
                let path = Path::new(p);
                if let Some(fast) = shown_plainly(path, roots.iter()) {
                    assert_eq!(
                        Some(fast),
                        by_components(path, roots),
                        "{p} under {roots:?}"
                    );
                } else if plain(p) && roots.iter().all(|r| plain(r.to_str().unwrap())) {
                    assert_eq!(by_components(path, roots), None, "{p} under {roots:?}");
                }
            }
        }
        assert_eq!(
            shown_plainly(Path::new("/srv/t/work/a.lobster"), roots_sets[0].iter()).as_deref(),
            Some("a.lobster")
        );
        assert_eq!(
            shown_plainly(Path::new("/srv/t/work//a"), roots_sets[0].iter()),
            None
        );
    }

    #[test]
    fn files_open_beneath_their_root_only() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("root");
        let other = base.join("other");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(root.join("sub/a.lobster"), "steps: []\n").unwrap();
        std::fs::write(other.join("b.lobster"), "steps: []\n").unwrap();
        std::os::unix::fs::symlink(&other, root.join("out")).unwrap();
        std::os::unix::fs::symlink("sub/a.lobster", root.join("in.lobster")).unwrap();
        let roots = [root.as_path()];
        let ok = open_file(&roots, &root.join("sub/../sub/a.lobster")).unwrap();
        assert_eq!(ok.path, root.join("sub/a.lobster"));
        assert_eq!(ok.relative(), "sub/a.lobster");
        assert_eq!(
            open_file(&roots, &root.join("in.lobster")).unwrap().path,
            root.join("sub/a.lobster")
        );
        for bad in [
            "../other/b.lobster",
            "out/b.lobster",
            "sub/../../other/b.lobster",
        ] {
            let e = open_file(&roots, &root.join(bad)).unwrap_err();
            assert!(matches!(e, Refused::Outside), "{bad}: {e:?}");
        }
        assert!(matches!(
            open_file(&roots, &other.join("b.lobster")),
            Err(Refused::Outside)
        ));
        assert!(matches!(
            open_file(&roots, &root.join("nope.lobster")),
            Err(Refused::Missing)
        ));
        assert!(matches!(
            open_file(&roots, &root.join("sub")),
            Err(Refused::WrongKind)
        ));
        // A second root is searched when the path is written under it.
        let both = [root.as_path(), other.as_path()];
        assert!(open_file(&both, &other.join("b.lobster")).is_ok());
    }

    #[test]
    fn directories_open_beneath_their_root_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("r");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::os::unix::fs::symlink("/", root.join("up")).unwrap();
        let d = open_dir(&root, Path::new("d")).unwrap();
        assert_eq!(d.path, root.join("d"));
        assert!(std::fs::metadata(d.handle_path()).unwrap().is_dir());
        assert!(matches!(
            open_dir(&root, Path::new("up")),
            Err(Refused::Outside)
        ));
        assert!(matches!(
            open_dir(&root, Path::new("/etc")),
            Err(Refused::Outside)
        ));
        assert!(matches!(
            open_dir(&root, Path::new("x")),
            Err(Refused::Missing)
        ));
        std::fs::write(root.join("f"), "").unwrap();
        std::os::unix::fs::symlink("f", root.join("to-f")).unwrap();
        for file in ["f", "to-f", "d/../f"] {
            assert!(
                matches!(open_dir(&root, Path::new(file)), Err(Refused::WrongKind)),
                "{file}"
            );
        }
        assert!(matches!(
            open_dir(&root, Path::new("f/x")),
            Err(Refused::Missing)
        ));
        assert!(existing_part_inside(&root, Path::new("d/new/deeper")));
        assert!(!existing_part_inside(&root, Path::new("up/etc")));
    }
}
