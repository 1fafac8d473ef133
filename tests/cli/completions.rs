//! `lobster completions bash|zsh|fish`, loaded into the real shells (bash,
//! and Debian's zsh and fish) and asked to complete, as a person pressing
//! Tab would.

use crate::common::{bin, Env};
use std::path::Path;
use std::process::Command;

/// Write the script for `shell` into the work directory.
fn script(env: &Env, shell: &str) -> std::path::PathBuf {
    let r = env.run(&["completions", shell]);
    assert_eq!(r.code, 0, "{r:?}");
    let path = env.work_path(&format!("lobster.{shell}"));
    std::fs::write(&path, &r.stdout).unwrap();
    path
}

/// `lobster` on the PATH of the shells below.
fn path_with_lobster() -> String {
    let dir = Path::new(bin()).parent().unwrap().display().to_string();
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

fn shell(env: &Env, program: &str, args: &[&str]) -> Option<String> {
    let out = match Command::new(program)
        .args(args)
        .current_dir(env.work.path())
        .env("PATH", path_with_lobster())
        .env("LOBSTER_STATE_DIR", env.state.path())
        .output()
    {
        Ok(out) => out,
        Err(_) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED: {program} is not installed");
            return None;
        }
        Err(e) => panic!("{program}: {e} (.ci/run installs zsh and fish)"),
    };
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The words bash offers for `line` (the cursor at its end).
fn bash_complete(env: &Env, file: &Path, line: &str) -> Option<Vec<String>> {
    let program = format!(
        r#"source {file}
complete -p lobster >/dev/null || exit 3
COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
_lobster lobster "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        file = file.display()
    );
    let out = shell(env, "bash", &["--norc", "-c", &program])?;
    Some(out.lines().map(str::to_string).collect())
}

#[test]
fn bash_completes_subcommands_flags_values_and_workflow_files() {
    let env = Env::new();
    let file = script(&env, "bash");
    std::fs::write(env.work_path("deploy.lobster"), "steps: []\n").unwrap();
    let Some(words) = bash_complete(&env, &file, "lobster ru") else {
        return;
    };
    assert_eq!(words, ["run", "runs"]);
    let words = bash_complete(&env, &file, "lobster ap").unwrap();
    assert_eq!(words, ["approvals", "approve"]);
    let words = bash_complete(&env, &file, "lobster step pu").unwrap();
    assert_eq!(words, ["publish", "pull"]);
    let words = bash_complete(&env, &file, "lobster serve ha").unwrap();
    assert_eq!(words, ["hash-password"]);
    let words = bash_complete(&env, &file, "lobster keys ").unwrap();
    assert_eq!(words, ["new", "--dir"]);
    let words = bash_complete(&env, &file, "lobster runs --status need").unwrap();
    assert_eq!(words, ["needs_approval", "needs_input"]);
    let words = bash_complete(&env, &file, "lobster s").unwrap();
    for w in [
        "serve",
        "step",
        "steps",
        "store",
        "schema",
        "sort",
        "state.get",
    ] {
        assert!(words.iter().any(|x| x == w), "{w} in {words:?}");
    }
    let words = bash_complete(&env, &file, "lobster run --mo").unwrap();
    assert_eq!(words, ["--mode"]);
    let words = bash_complete(&env, &file, "lobster run --mode ").unwrap();
    assert_eq!(words, ["human", "tool"]);
    let words = bash_complete(&env, &file, "lobster graph x.lobster --format ").unwrap();
    assert_eq!(words, ["mermaid", "dot", "ascii"]);
    let words = bash_complete(&env, &file, "lobster check --format ").unwrap();
    assert_eq!(words, ["human", "json", "sarif", "github"]);
    let words = bash_complete(&env, &file, "lobster run dep").unwrap();
    assert_eq!(words, ["deploy.lobster"]);
    let words = bash_complete(&env, &file, "lobster completions ").unwrap();
    assert_eq!(words, ["bash", "zsh", "fish"]);
    let words = bash_complete(&env, &file, "lobster --color always vers").unwrap();
    assert_eq!(words, ["version"]);
    let words = bash_complete(&env, &file, "lobster help doc").unwrap();
    assert_eq!(words, ["doctor"]);
}

#[test]
fn zsh_loads_the_script_and_completes() {
    let env = Env::new();
    let file = script(&env, "zsh");
    // compinit registers the function; `compadd` is replaced by one that
    // prints what it is given, so the real `_lobster` runs outside a widget.
    let program = format!(
        r#"autoload -U compinit && compinit -u -d {dump}
source {file}
[[ ${{_comps[lobster]}} == _lobster ]] || {{ print "not registered"; exit 3 }}
compadd() {{ [[ $1 == -- ]] && shift; print -l -- "$@" }}
_files() {{ }}
_directories() {{ }}
for line in 'lobster ru' 'lobster run --mode ' 'lobster doctor --js' 'lobster completions ' 'lobster step pu' 'lobster ver'; do
  words=(${{(z)line}}); [[ $line == *' ' ]] && words+=('')
  CURRENT=${{#words}}
  print "== $line"
  _lobster | grep -- "^${{words[CURRENT]}}"
done"#,
        dump = env.work_path("zcompdump").display(),
        file = file.display()
    );
    let Some(out) = shell(&env, "zsh", &["-f", "-c", &program]) else {
        return;
    };
    let section = |line: &str| -> Vec<String> {
        out.split("== ")
            .find(|s| s.starts_with(line) && s[line.len()..].starts_with('\n'))
            .map(|s| s.lines().skip(1).map(str::to_string).collect())
            .unwrap_or_default()
    };
    assert_eq!(section("lobster ru"), ["run", "runs"], "{out}");
    assert_eq!(section("lobster step pu"), ["publish", "pull"], "{out}");
    assert_eq!(section("lobster ver"), ["verify", "version"], "{out}");
    assert_eq!(section("lobster run --mode "), ["human", "tool"], "{out}");
    assert_eq!(section("lobster doctor --js"), ["--json"], "{out}");
    assert_eq!(
        section("lobster completions "),
        ["bash", "zsh", "fish"],
        "{out}"
    );
}

#[test]
fn fish_loads_the_script_and_completes() {
    let env = Env::new();
    let file = script(&env, "fish");
    let program = format!(
        r#"source {file}
complete -C 'lobster ru'
echo ==
complete -C 'lobster run --mo'
echo ==
complete -C 'lobster run --mode '
echo ==
complete -C 'lobster completions '
echo ==
complete -C 'lobster step pu'"#,
        file = file.display()
    );
    let Some(out) = shell(&env, "fish", &["--no-config", "-c", &program]) else {
        return;
    };
    let parts: Vec<Vec<&str>> = out
        .split("==\n")
        .map(|p| {
            p.lines()
                .map(|l| l.split('\t').next().unwrap_or_default())
                .collect()
        })
        .collect();
    assert_eq!(parts[0], ["run", "runs"], "{out}");
    assert_eq!(parts[1], ["--mode"], "{out}");
    assert_eq!(parts[2], ["human", "tool"], "{out}");
    assert_eq!(parts[3], ["bash", "fish", "zsh"], "{out}");
    assert_eq!(parts[4], ["publish", "pull"], "{out}");
}

#[test]
fn an_unknown_shell_is_refused() {
    let env = Env::new();
    let r = env.run(&["completions", "powershell"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("bash, zsh or fish"), "{r:?}");
}
