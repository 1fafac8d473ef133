//! The run's endpoints: where brokered calls may go and which secret each
//! may carry, resolved ONCE per run from the operator's sources into one
//! value the run's [`super::Broker`] holds.
//!
//! Operator sources, in order of precedence:
//! 1. the policy's `[gateway]` (`url`, `token_env`, `ca_file`) and
//!    `[model.<provider>]` tables (`url`, `key_env`, `model`, `stream`),
//!    the variables they name read from the operator's environment;
//! 2. on the command line's own runs (not for a `lobster serve` tenant), the
//!    reference's variables in the process environment at start:
//!    `OPENCLAW_URL`/`CLAWD_URL` + `OPENCLAW_TOKEN`/`CLAWD_TOKEN`,
//!    `LOBSTER_LLM_ADAPTER_URL` + `_TOKEN`, `LOBSTER_PI_LLM_ADAPTER_URL` +
//!    `_TOKEN`, `LOBSTER_LLM_BASE_URL` + `LOBSTER_LLM_API_KEY`,
//!    `LOBSTER_LLM_MODEL`, `LOBSTER_LLM_STREAM`, `LOBSTER_LLM_PROVIDER`,
//!    `LOBSTER_CACHE_DIR`, `LOBSTER_MAX_HTTP_RESPONSE_BYTES`.
//!
//! Nothing reads a step's environment (a workflow's `env:`) for any of
//! these. Each secret is a [`BoundSecret`]: it goes only to the origin of
//! the URL it was configured with. A pipeline's `--url` (trusted runs only)
//! is another URL: it gets the configured secret only when its origin is
//! the configured one, else no secret (`--token` sends the pipeline's own).

use super::http::Url;
use crate::kernel::{
    credential::{BoundSecret, Secret},
    policy::PROVIDERS,
    Policy,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the run's operator configuration comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sources {
    /// The command line's own runs (`lobster run`, `resume`, `call`, `mcp`):
    /// the policy, then the reference's variables in the environment at start.
    Process,
    /// A `lobster serve` tenant: its policy file only (the variables it names
    /// are read from the server's environment); nothing implicit.
    Tenant,
}

/// An endpoint the operator configured, with its secret bound to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Configured {
    /// The URL as configured (`Err`: the configured text, which is not an
    /// http(s) URL; the error is reported when a call needs it).
    pub url: Result<Url, String>,
    /// The secret, bound to `url`'s origin.
    pub secret: Option<BoundSecret>,
    /// The secret came from the reference's environment variables (the
    /// reference sends those to loopback hosts only).
    pub from_env: bool,
}

impl Configured {
    fn new(url: &str, secret: Option<(&str, String)>, from_env: bool) -> Configured {
        let parsed = Url::parse(url).map_err(|_| url.trim().to_string());
        let secret = match (&parsed, secret) {
            (Ok(u), Some((value, source))) => {
                Secret::new(value).map(|s| BoundSecret::new(u.origin(), s, source))
            }
            _ => None,
        };
        Configured {
            url: parsed,
            secret,
            from_env,
        }
    }

    /// The configured secret for a request to `url`: only when `url`'s
    /// origin is the configured one.
    pub fn secret_for(&self, url: &Url) -> Option<&str> {
        self.secret.as_ref()?.for_origin(&url.origin())
    }
}

/// A model provider's endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelEndpoint {
    /// URL and key.
    pub endpoint: Configured,
    /// The model asked for when a call names none.
    pub model: Option<String>,
    /// Ask for streamed answers.
    pub stream: bool,
}

/// Where `llm.invoke` keeps its answer cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cache {
    /// A directory (the CLI: `LOBSTER_CACHE_DIR` at start, relative to the
    /// run's working directory; default `.lobster-cache` there), keyed as
    /// the reference keys it, so runs of one operator share it.
    Dir(Option<PathBuf>),
    /// The tenant's own store, keyed by origin, model and request.
    Store,
}

/// Everything a run's brokered calls may use, fixed when the run starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoints {
    /// Where the configuration came from.
    pub sources: Sources,
    /// The gateway (`[gateway]`, else `OPENCLAW_URL`/`CLAWD_URL`).
    pub gateway: Option<Configured>,
    /// `OPENCLAW_TOKEN`/`CLAWD_TOKEN` when no gateway URL is configured:
    /// bound to no origin, so never sent (kept to say why).
    pub unbound_env_token: bool,
    /// Model providers by name.
    pub models: BTreeMap<&'static str, ModelEndpoint>,
    /// The provider used when a call names none and its own
    /// `LOBSTER_LLM_PROVIDER` does not (`[model] provider`, else the
    /// variable at start).
    pub default_provider: Option<String>,
    /// The operator's extra CA bundle (`[gateway] ca_file`).
    pub ca_file: Option<PathBuf>,
    /// `llm.invoke`'s cache.
    pub cache: Cache,
    /// `LOBSTER_MAX_HTTP_RESPONSE_BYTES` at start, as written.
    pub http_limit: Option<String>,
}

impl Default for Endpoints {
    /// Nothing configured (a run with no operator endpoints).
    fn default() -> Self {
        Endpoints {
            sources: Sources::Process,
            gateway: None,
            unbound_env_token: false,
            models: BTreeMap::new(),
            default_provider: None,
            ca_file: None,
            cache: Cache::Dir(None),
            http_limit: None,
        }
    }
}

fn get<'a>(env: &'a BTreeMap<String, String>, k: &str) -> Option<&'a str> {
    env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty())
}

impl Endpoints {
    /// Resolve the endpoints of a run under `policy` from `env`, the
    /// operator's environment as it was when `lobster` started (never a
    /// step's). `sources` says whether the reference's variables count.
    pub fn resolve(policy: &Policy, env: &BTreeMap<String, String>, sources: Sources) -> Self {
        let implicit = sources == Sources::Process;
        let named = |var: &Option<String>| -> Option<(String, String)> {
            let var = var.as_deref()?;
            Some((
                get(env, var).unwrap_or_default().to_string(),
                format!("the variable {var}"),
            ))
        };
        let gw = &policy.gateway;
        let env_url = get(env, "OPENCLAW_URL").or_else(|| get(env, "CLAWD_URL"));
        let env_token = get(env, "OPENCLAW_TOKEN")
            .map(|t| (t, "OPENCLAW_TOKEN"))
            .or_else(|| get(env, "CLAWD_TOKEN").map(|t| (t, "CLAWD_TOKEN")));
        let mut unbound_env_token = false;
        let gateway = match (&gw.url, implicit) {
            (Some(url), _) => {
                let s = named(&gw.token_env);
                Some(Configured::new(
                    url,
                    s.as_ref().map(|(v, src)| (v.as_str(), src.clone())),
                    false,
                ))
            }
            (None, true) => match env_url {
                Some(url) => Some(Configured::new(
                    url,
                    env_token.map(|(t, src)| (t, src.to_string())),
                    true,
                )),
                None => {
                    unbound_env_token = env_token.is_some();
                    None
                }
            },
            (None, false) => None,
        };
        let mut models = BTreeMap::new();
        for name in PROVIDERS {
            let table = policy.model.provider(name);
            let from_policy = table.and_then(|t| {
                let url = t.url.as_deref().or(if name == "openclaw" {
                    gw.url.as_deref()
                } else {
                    None
                })?;
                let key_env = match (&t.key_env, name) {
                    (Some(k), _) => Some(k.clone()),
                    (None, "openclaw") if t.url.is_none() => gw.token_env.clone(),
                    _ => None,
                };
                let s = named(&key_env);
                Some(Configured::new(
                    url,
                    s.as_ref().map(|(v, src)| (v.as_str(), src.clone())),
                    false,
                ))
            });
            let endpoint = match (from_policy, name, implicit) {
                (Some(c), _, _) => Some(c),
                (None, "openclaw", _) => gateway.clone(),
                (None, _, false) => None,
                (None, _, true) => {
                    let (url_var, key_var) = match name {
                        "http" => ("LOBSTER_LLM_ADAPTER_URL", "LOBSTER_LLM_ADAPTER_TOKEN"),
                        "pi" => ("LOBSTER_PI_LLM_ADAPTER_URL", "LOBSTER_PI_LLM_ADAPTER_TOKEN"),
                        _ => ("LOBSTER_LLM_BASE_URL", "LOBSTER_LLM_API_KEY"),
                    };
                    get(env, url_var).map(|url| {
                        let key = get(env, key_var).map(|k| (k, key_var.to_string()));
                        Configured::new(url, key, false)
                    })
                }
            };
            let Some(mut endpoint) = endpoint else {
                continue;
            };
            if name == "openai" {
                // `<base>/chat/completions`, on the same origin.
                endpoint.url = endpoint.url.map(|u| {
                    let base = u.path.trim_end_matches('/').to_string();
                    u.with_path(&format!("{base}/chat/completions"))
                });
            }
            if matches!(name, "http" | "pi") {
                endpoint.url = endpoint.url.map(|mut u| {
                    if u.path == "/" {
                        u.path = "/invoke".into();
                    }
                    u
                });
            }
            let model = table.and_then(|t| t.model.clone()).or_else(|| {
                implicit
                    .then(|| get(env, "LOBSTER_LLM_MODEL").or_else(|| get(env, "LLM_TASK_MODEL")))
                    .flatten()
                    .map(str::to_string)
            });
            let stream = match table.and_then(|t| t.stream) {
                Some(s) => s,
                None => {
                    implicit
                        && get(env, "LOBSTER_LLM_STREAM")
                            .is_some_and(|v| matches!(v, "1" | "true" | "yes"))
                }
            };
            models.insert(
                name,
                ModelEndpoint {
                    endpoint,
                    model,
                    stream,
                },
            );
        }
        let default_provider = policy.model.provider.clone().or_else(|| {
            implicit
                .then(|| get(env, "LOBSTER_LLM_PROVIDER").map(str::to_lowercase))
                .flatten()
        });
        Endpoints {
            sources,
            gateway,
            unbound_env_token,
            models,
            default_provider,
            ca_file: policy.ca_file(),
            cache: if implicit {
                Cache::Dir(get(env, "LOBSTER_CACHE_DIR").map(PathBuf::from))
            } else {
                Cache::Store
            },
            http_limit: if implicit {
                get(env, "LOBSTER_MAX_HTTP_RESPONSE_BYTES").map(str::to_string)
            } else {
                None
            },
        }
    }

    /// The model provider a call without `--provider` uses: `[model]
    /// provider` (or `LOBSTER_LLM_PROVIDER` at start), else the first
    /// configured of `pi`, `openclaw`, `http`, `openai` (the reference's
    /// auto-detection order).
    pub fn detect_provider(&self) -> Option<String> {
        if let Some(p) = &self.default_provider {
            return Some(p.clone());
        }
        ["pi", "openclaw", "http", "openai"]
            .into_iter()
            .find(|p| self.models.contains_key(p))
            .map(str::to_string)
    }

    /// The cache directory for a run whose working directory is `workdir`
    /// (`None` when the cache is the store's).
    pub fn cache_dir(&self, workdir: &Path) -> Option<PathBuf> {
        match &self.cache {
            Cache::Dir(Some(d)) => Some(workdir.join(d)),
            Cache::Dir(None) => Some(workdir.join(".lobster-cache")),
            Cache::Store => None,
        }
    }

    /// The HTTP response cap (`LOBSTER_MAX_HTTP_RESPONSE_BYTES` at start).
    pub fn http_limit(&self) -> crate::error::Result<Option<usize>> {
        let mut env = BTreeMap::new();
        if let Some(v) = &self.http_limit {
            env.insert("LOBSTER_MAX_HTTP_RESPONSE_BYTES".to_string(), v.clone());
        }
        super::http_limit_from_env(&env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn policy(text: &str) -> Policy {
        Policy::parse(text, Path::new("/etc/lobster/p.toml")).unwrap()
    }

    #[test]
    fn the_reference_variables_configure_the_command_lines_runs_only() {
        let e = env(&[
            ("OPENCLAW_URL", "http://127.0.0.1:18789"),
            ("OPENCLAW_TOKEN", "gw-secret"),
            ("LOBSTER_LLM_BASE_URL", "https://api.example/v1/"),
            ("LOBSTER_LLM_API_KEY", "sk-secret"),
            ("LOBSTER_LLM_MODEL", "m1"),
            ("LOBSTER_CACHE_DIR", "/tmp/c"),
        ]);
        let cli = Endpoints::resolve(&Policy::default(), &e, Sources::Process);
        let gw = cli.gateway.as_ref().unwrap();
        let at = |u: &str| Url::parse(u).unwrap();
        assert_eq!(
            gw.secret_for(&at("http://127.0.0.1:18789/tools/invoke")),
            Some("gw-secret")
        );
        assert_eq!(
            gw.secret_for(&at("http://127.0.0.1:18790/tools/invoke")),
            None
        );
        let openai = &cli.models["openai"];
        assert_eq!(
            openai.endpoint.url.as_ref().unwrap().path,
            "/v1/chat/completions"
        );
        assert_eq!(
            openai
                .endpoint
                .secret_for(openai.endpoint.url.as_ref().unwrap()),
            Some("sk-secret")
        );
        assert_eq!(openai.model.as_deref(), Some("m1"));
        assert_eq!(cli.detect_provider().as_deref(), Some("openclaw"));
        assert_eq!(
            cli.cache_dir(Path::new("/w")),
            Some(PathBuf::from("/tmp/c"))
        );
        // A tenant of lobster serve sees none of it.
        let tenant = Endpoints::resolve(&Policy::default(), &e, Sources::Tenant);
        assert!(tenant.gateway.is_none() && tenant.models.is_empty());
        assert_eq!(tenant.cache, Cache::Store);
        assert_eq!(tenant.detect_provider(), None);
    }

    #[test]
    fn policy_tables_win_and_bind_their_own_variables() {
        let p = policy(
            "[gateway]\nurl = \"https://gw.example\"\ntoken_env = \"GW\"\n\
             [model]\nprovider = \"http\"\n[model.http]\nurl = \"http://127.0.0.1:9/\"\nkey_env = \"AK\"\nmodel = \"x\"\n",
        );
        let e = env(&[
            ("GW", "g"),
            ("AK", "a"),
            ("OPENCLAW_URL", "http://127.0.0.1:1"),
            ("OPENCLAW_TOKEN", "env"),
            ("LOBSTER_LLM_ADAPTER_URL", "http://127.0.0.1:2"),
        ]);
        for sources in [Sources::Process, Sources::Tenant] {
            let ep = Endpoints::resolve(&p, &e, sources);
            let gw = ep.gateway.as_ref().unwrap();
            assert!(!gw.from_env);
            let url = gw.url.as_ref().unwrap();
            assert_eq!((url.host.as_str(), url.port), ("gw.example", 443));
            assert_eq!(gw.secret_for(url), Some("g"));
            let http = &ep.models["http"];
            let u = http.endpoint.url.as_ref().unwrap();
            assert_eq!((u.port, u.path.as_str()), (9, "/invoke"));
            assert_eq!(http.endpoint.secret_for(u), Some("a"));
            // openclaw falls back to [gateway].
            assert_eq!(ep.models["openclaw"].endpoint, *gw);
            assert_eq!(ep.detect_provider().as_deref(), Some("http"));
            assert_eq!(ep.ca_file, None);
        }
    }

    #[test]
    fn a_token_without_a_url_is_bound_to_nothing() {
        let ep = Endpoints::resolve(
            &Policy::default(),
            &env(&[("OPENCLAW_TOKEN", "t")]),
            Sources::Process,
        );
        assert!(ep.gateway.is_none() && ep.unbound_env_token);
        let bad = Endpoints::resolve(
            &Policy::default(),
            &env(&[("OPENCLAW_URL", "ftp://x"), ("OPENCLAW_TOKEN", "t")]),
            Sources::Process,
        );
        let gw = bad.gateway.unwrap();
        assert_eq!(gw.url, Err("ftp://x".to_string()));
        assert!(gw.secret.is_none());
    }
}
