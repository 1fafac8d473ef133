//! A reference → a verified component file in the cache.
//!
//! The digest comes from the reference (`…@sha256:…`) or from its pin in
//! `lobster.lock`; both named and different is refused. A reference with
//! neither is resolved at the registry only when the caller allows it
//! (`lobster lock`, `lobster check`, `lobster step pull`); a run refuses it,
//! so what runs is always a digest someone wrote down. The cache is asked
//! first; on a miss the step is pulled by digest (never by tag) and
//! verified ([`super::Client::pull`], [`super::Cache::store`]), and the
//! component's blake3 must equal the pin's.

use super::cache::{Cache, Entry};
use super::client::{Access, Client};
use super::reference::Reference;
use super::RegistryError;

/// What `lobster.lock` pins a reference to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The manifest digest.
    pub digest: String,
    /// The component's blake3.
    pub blake3: String,
}

/// A fetched step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The reference at the digest that was used.
    pub reference: Reference,
    /// The cached step.
    pub entry: Entry,
    /// Whether it was pulled now (not found in the cache).
    pub pulled: bool,
}

/// Fetches steps through a cache.
pub struct Fetcher {
    cache: Cache,
    access: Access,
}

impl Fetcher {
    /// Fetch into `cache`, reaching registries as `access` says.
    pub fn new(cache: Cache, access: Access) -> Fetcher {
        Fetcher { cache, access }
    }

    /// The cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// A registry client with this fetcher's access.
    pub fn client(&self) -> Client {
        Client::new(self.access.clone())
    }

    /// The digest `r` stands for: its own, its pin's, or (when
    /// `resolve_tags`) what its tag points to now.
    pub fn digest_of(
        &self,
        r: &Reference,
        pin: Option<&Pin>,
        resolve_tags: bool,
    ) -> Result<String, RegistryError> {
        match (&r.digest, pin) {
            (Some(named), Some(p)) if *named != p.digest => Err(RegistryError::PinConflict {
                reference: r.unpinned(),
                named: named.clone(),
                pinned: p.digest.clone(),
            }),
            (Some(named), _) => Ok(named.clone()),
            (None, Some(p)) => Ok(p.digest.clone()),
            (None, None) if resolve_tags => Ok(self.client().manifest(r)?.0),
            (None, None) => Err(RegistryError::Unpinned(r.to_string())),
        }
    }

    /// The cached, verified step `r` names.
    pub fn fetch(
        &self,
        r: &Reference,
        pin: Option<&Pin>,
        resolve_tags: bool,
    ) -> Result<Fetched, RegistryError> {
        let digest = self.digest_of(r, pin, resolve_tags)?;
        let at = r.at(&digest);
        let (entry, pulled) = match self.cache.lookup(&digest)? {
            Some(e) => (e, false),
            None => {
                let pulled = self.client().pull(&at)?;
                (self.cache.store(&pulled, &at.to_string())?, true)
            }
        };
        if let Some(p) = pin.filter(|p| p.blake3 != entry.blake3) {
            return Err(RegistryError::Digest {
                reference: at.to_string(),
                what: "component (blake3 pinned in lobster.lock)".into(),
                expected: p.blake3.clone(),
                got: entry.blake3,
            });
        }
        Ok(Fetched {
            reference: at,
            entry,
            pulled,
        })
    }
}
