//! The CI formats of `lobster check`: SARIF 2.1.0 (for code-scanning
//! upload; checked in tests against the OASIS schema) and GitHub Actions
//! workflow commands (`::error file=…,line=…::…`, shown inline on a pull
//! request).

use crate::policy::Finding;
use serde_json::{json, Value};
use std::path::Path;

/// Every rule a finding can be filed under: id, one-line description.
pub const RULES: &[(&str, &str)] = &[
    ("lobster/component", "Components implement lobster:step or wasi:cli/command and import only what the host provides"),
    ("lobster/bundle", "Bundles match their manifest (digest, world, describe)"),
    ("lobster/lock", "Components match their pins in lobster.lock"),
    ("lobster/workflow", "Workflows validate and pass the operator policy"),
    ("lobster/signature", "Components are signed by a trusted signer when the policy requires it, and every signature verifies"),
    ("lobster/registry", "Registry references resolve to their pinned digest and verify"),
    ("lobster/run-time", "Decided only when the workflow runs (templated paths)"),
    ("lobster/check", "Other problems lobster check found"),
];

/// `path` as a SARIF artifact URI: relative to `cwd` when inside it, with
/// `/` separators and reserved characters percent-encoded.
fn uri(path: &Path, cwd: &Path) -> String {
    let rel = path.strip_prefix(cwd).unwrap_or(path);
    let text = rel.to_string_lossy();
    let text = text.strip_prefix("./").unwrap_or(&text);
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    if out.is_empty() {
        ".".into()
    } else {
        out
    }
}

fn result(f: &Finding, level: &str, cwd: &Path) -> Value {
    let rule = if level == "warning" {
        "lobster/run-time"
    } else {
        f.rule
    };
    let index = RULES
        .iter()
        .position(|(id, _)| *id == rule)
        .unwrap_or(RULES.len() - 1);
    let mut location = json!({
        "physicalLocation": {
            "artifactLocation": { "uri": uri(&f.path, cwd), "uriBaseId": "%SRCROOT%" }
        }
    });
    if let Some(line) = f.line.filter(|l| *l > 0) {
        location["physicalLocation"]["region"] = json!({ "startLine": line });
    }
    json!({
        "ruleId": RULES[index].0,
        "ruleIndex": index,
        "level": level,
        "message": { "text": f.message },
        "locations": [location],
    })
}

/// The SARIF 2.1.0 log of one check.
pub fn sarif(findings: &[Finding], warnings: &[Finding], cwd: &Path, exit_code: i32) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, text)| {
            json!({
                "id": id,
                "shortDescription": { "text": text },
                "helpUri": "https://github.com/openclaw/lobster/blob/main/README.md#ci",
            })
        })
        .collect();
    let mut results: Vec<Value> = findings.iter().map(|f| result(f, "error", cwd)).collect();
    results.extend(warnings.iter().map(|f| result(f, "warning", cwd)));
    let mut root = cwd.to_string_lossy().into_owned();
    if !root.ends_with('/') {
        root.push('/');
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "lobster",
                "version": crate::VERSION,
                "informationUri": "https://github.com/openclaw/lobster",
                "rules": rules,
            }},
            "originalUriBaseIds": { "%SRCROOT%": { "uri": format!("file://{}", uri(Path::new(&root), Path::new(""))) } },
            "invocations": [{ "executionSuccessful": exit_code != 2, "exitCode": exit_code }],
            "results": results,
        }]
    })
}

/// A workflow command's data, escaped as the runner expects.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value, escaped.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions annotations, one per finding, then a summary line.
pub fn github(findings: &[Finding], warnings: &[Finding], cwd: &Path, summary: &str) -> String {
    let mut out = String::new();
    let mut line = |kind: &str, f: &Finding| {
        let path = f
            .path
            .strip_prefix(cwd)
            .unwrap_or(&f.path)
            .to_string_lossy()
            .into_owned();
        let mut props = format!("file={}", escape_property(&path));
        if let Some(l) = f.line {
            props.push_str(&format!(",line={l}"));
        }
        props.push_str(&format!(",title={}", escape_property(f.rule)));
        out.push_str(&format!("::{kind} {props}::{}\n", escape_data(&f.message)));
    };
    for f in findings {
        line("error", f);
    }
    for f in warnings {
        line("warning", f);
    }
    out.push_str(summary);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_escape_what_the_runner_would_misread() {
        let f = Finding::new("/w/a,b:c.lobster", "100% bad\nsecond line")
            .at_line(Some(3))
            .rule("lobster/workflow");
        let text = github(&[f], &[], Path::new("/w"), "done\n");
        assert_eq!(
            text,
            "::error file=a%2Cb%3Ac.lobster,line=3,title=lobster/workflow::100%25 bad%0Asecond line\ndone\n"
        );
    }

    #[test]
    fn uris_are_relative_and_encoded() {
        assert_eq!(
            uri(Path::new("/w/steps/a b.wasm"), Path::new("/w")),
            "steps/a%20b.wasm"
        );
        assert_eq!(uri(Path::new("./x.lock"), Path::new("/w")), "x.lock");
        let log = sarif(
            &[Finding::new("a.wasm", "x").rule("lobster/signature")],
            &[],
            Path::new("/w"),
            1,
        );
        assert_eq!(log["runs"][0]["results"][0]["ruleId"], "lobster/signature");
        assert_eq!(log["runs"][0]["results"][0]["ruleIndex"], 4);
    }
}
