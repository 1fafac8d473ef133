//! Plans are pinned: a paused run records, for every WebAssembly component
//! its plan runs, the name it was asked for, the file it resolved to and
//! its blake3 digest; a resume resolves every name again and refuses
//! (before claiming the state) when anything differs, so a component added
//! to the step path after the approval, under a name the resolver prefers,
//! cannot run in place of the approved one.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// One component of a paused plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentPin {
    /// The stage name (or `uses:` path) as the plan names it.
    pub name: String,
    /// The file it resolved to at the pause.
    pub path: String,
    /// Its blake3 digest at the pause.
    pub digest: String,
}

/// The error for a component that is not the one a paused run recorded.
pub fn changed(name: &str, was: &str, now: Option<&str>) -> Error {
    let short = |d: &str| d[..12.min(d.len())].to_string();
    Error::runtime(format!(
        "step {name} changed since the run paused (digest {} at the pause, {} now); refusing to resume",
        short(was),
        now.map_or("missing".to_string(), short),
    ))
    .with_hint("start the run again to approve the new component")
}

/// Check every pin against `resolve(name)` (the file and digest the name
/// resolves to now): a different digest or a different file is refused.
pub fn verify(
    pinned: &[ComponentPin],
    resolve: impl Fn(&str) -> Option<(String, String)>,
) -> Result<()> {
    for pin in pinned {
        match resolve(&pin.name) {
            Some((_, digest)) if digest != pin.digest => {
                return Err(changed(&pin.name, &pin.digest, Some(&digest)))
            }
            Some((path, _)) if path != pin.path => {
                return Err(Error::runtime(format!(
                    "step {} now resolves to {path}, not to {} as when the run paused; refusing to resume",
                    pin.name, pin.path
                ))
                .with_hint("remove the new file from the step path, or start the run again to approve it"))
            }
            Some(_) => {}
            None => return Err(changed(&pin.name, &pin.digest, None)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_and_path_are_both_pinned() {
        let pins = [ComponentPin {
            name: "a".into(),
            path: "/s/a.wasm".into(),
            digest: "d1".into(),
        }];
        let now = |p: &'static str, d: &'static str| move |_: &str| Some((p.into(), d.into()));
        assert!(verify(&pins, now("/s/a.wasm", "d1")).is_ok());
        let e = verify(&pins, now("/s/a.wasm", "d2")).unwrap_err();
        assert!(
            e.to_string().contains("changed since the run paused"),
            "{e}"
        );
        let e = verify(&pins, now("/t/a.wasm", "d1")).unwrap_err();
        assert!(e.to_string().contains("now resolves to /t/a.wasm"), "{e}");
        assert!(verify(&pins, |_| None).is_err());
    }
}
