//! `lobster completions bash|zsh|fish`: completion scripts generated from
//! the subcommand table ([`super::subcommands`]) and the built-in commands,
//! so they list exactly what this binary accepts. Each script completes the
//! subcommands (and pipeline command names) in first position, a
//! subcommand's flags and words, the values of enumerated flags, directories
//! after directory flags and files after file flags and as workflow paths.

use super::output::write_once;
use super::subcommands::{Subcommand, SUBCOMMANDS};

/// Flags whose value is a directory.
const DIR_FLAGS: &[&str] = &[
    "--steps",
    "--allow-read",
    "--allow-write",
    "--cwd",
    "--workflows",
    "--dir",
    "--sdk",
];

/// Flags whose value is a file.
const FILE_FLAGS: &[&str] = &["--file", "--policy", "--config", "--out", "--key"];

/// Enumerated values: (subcommand or `*` for any, flag, values).
const VALUES: &[(&str, &str, &[&str])] = &[
    ("*", "--mode", &["human", "tool"]),
    ("*", "--color", &["auto", "always", "never"]),
    ("*", "--approvals", &["agent", "human"]),
    ("*", "--lang", &["rust", "python", "js"]),
    ("*", "--approve", &["yes", "no"]),
    ("*", "--decision", &["yes", "no"]),
    ("check", "--format", &["human", "json", "sarif", "github"]),
    ("runs", "--status", &crate::state::journal::RUN_STATUSES),
    ("graph", "--format", &["mermaid", "dot", "ascii"]),
];

/// `lobster completions SHELL`.
pub fn completions(argv: &[String]) -> i32 {
    let script = match argv.first().map(String::as_str) {
        Some("bash") => bash(),
        Some("zsh") => zsh(),
        Some("fish") => fish(),
        Some("-h" | "--help") => {
            write_once(super::help::COMPLETIONS_HELP, "");
            return 0;
        }
        other => {
            let got = other.map(|o| format!(" (got {o:?})")).unwrap_or_default();
            write_once(
                "",
                &format!(
                    "Parse error: lobster completions needs a shell: bash, zsh or fish{got}\n"
                ),
            );
            return 2;
        }
    };
    write_once(&script, "");
    0
}

/// Words for the first position: subcommands, pipeline commands, global flags.
fn first_words() -> Vec<String> {
    let mut words: Vec<String> = SUBCOMMANDS.iter().map(|s| s.name.to_string()).collect();
    words.extend(
        crate::commands::builtin()
            .names()
            .into_iter()
            .map(str::to_string),
    );
    words.extend(
        ["--help", "--version", "--store", "--color"]
            .iter()
            .map(|s| s.to_string()),
    );
    words
}

/// What may follow subcommand `sub` (its words and flags; `help`: topics).
fn sub_words(sub: &Subcommand) -> Vec<String> {
    let mut words: Vec<String> = sub.words.iter().map(|w| w.to_string()).collect();
    if sub.name == "help" {
        words.extend(SUBCOMMANDS.iter().map(|s| s.name.to_string()));
        words.extend(
            crate::commands::builtin()
                .names()
                .into_iter()
                .map(str::to_string),
        );
    }
    words.extend(sub.flags.iter().map(|f| f.to_string()));
    words
}

fn values_for(sub: &str, flag: &str) -> Option<&'static [&'static str]> {
    VALUES
        .iter()
        .find(|(s, f, _)| *f == flag && *s == sub)
        .or_else(|| VALUES.iter().find(|(s, f, _)| *f == flag && *s == "*"))
        .map(|(_, _, v)| *v)
}

fn bash() -> String {
    let mut subs = String::new();
    for sub in SUBCOMMANDS {
        subs.push_str(&format!(
            "    {}) words=\"{}\" ;;\n",
            sub.name,
            sub_words(sub).join(" ")
        ));
    }
    let mut values = String::new();
    for (sub, flag, vals) in VALUES {
        let pattern = if *sub == "*" {
            format!("*:{flag}")
        } else {
            format!("{sub}:{flag}")
        };
        values.push_str(&format!(
            "    {pattern}) COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return ;;\n",
            vals.join(" ")
        ));
    }
    // Specific patterns first: bash takes the first match.
    let mut ordered: Vec<&str> = values
        .lines()
        .filter(|l| !l.trim_start().starts_with("*:"))
        .collect();
    ordered.extend(values.lines().filter(|l| l.trim_start().starts_with("*:")));
    format!(
        r#"# bash completion for lobster (lobster completions bash)
_lobster() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  local sub="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in
      --store|--color) ((i++)) ;;
      -*) ;;
      *) sub="${{COMP_WORDS[i]}}"; break ;;
    esac
  done
  case "$prev" in
    {dirs}) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    {files}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  case "$sub:$prev" in
{values}
  esac
  local words
  case "$sub" in
    "") words="{first}" ;;
{subs}    *) words="" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  case "$sub" in
    run|graph|check|lock|"") COMPREPLY+=($(compgen -f -X '!*.@(lobster|yaml|yml|json|wasm)' -- "$cur")) ;;
  esac
}}
shopt -s extglob 2>/dev/null
complete -o filenames -o bashdefault -F _lobster lobster
"#,
        dirs = DIR_FLAGS.join("|"),
        files = FILE_FLAGS.join("|"),
        values = ordered.join("\n"),
        first = first_words().join(" "),
        subs = subs,
    )
}

fn zsh() -> String {
    let mut subs = String::new();
    for sub in SUBCOMMANDS {
        subs.push_str(&format!(
            "    {}) cands=({}) ;;\n",
            sub.name,
            sub_words(sub).join(" ")
        ));
    }
    let mut values = String::new();
    for (sub, flag, vals) in VALUES.iter().filter(|(s, _, _)| *s != "*") {
        values.push_str(&format!(
            "    {sub}:{flag}) compadd -- {}; return ;;\n",
            vals.join(" ")
        ));
    }
    for (_, flag, vals) in VALUES.iter().filter(|(s, _, _)| *s == "*") {
        values.push_str(&format!(
            "    *:{flag}) compadd -- {}; return ;;\n",
            vals.join(" ")
        ));
    }
    format!(
        r#"#compdef lobster
# zsh completion for lobster (lobster completions zsh)
_lobster() {{
  local cur=${{words[CURRENT]}} prev=${{words[CURRENT-1]}} sub="" i
  local -a cands
  for (( i = 2; i < CURRENT; i++ )); do
    case ${{words[i]}} in
      --store|--color) (( i++ )) ;;
      -*) ;;
      *) sub=${{words[i]}}; break ;;
    esac
  done
  case $prev in
    {dirs}) _directories; return ;;
    {files}) _files; return ;;
  esac
  case "$sub:$prev" in
{values}  esac
  case $sub in
    "") cands=({first}) ;;
{subs}  esac
  compadd -- $cands
  case $sub in
    run|graph|check|lock|"") _files -g '*.(lobster|yaml|yml|json|wasm)' ;;
  esac
}}
if (( $+functions[compdef] )); then
  compdef _lobster lobster
fi
"#,
        dirs = DIR_FLAGS.join("|"),
        files = FILE_FLAGS.join("|"),
        values = values,
        first = first_words().join(" "),
        subs = subs,
    )
}

fn fish() -> String {
    let mut out = String::from(
        "# fish completion for lobster (lobster completions fish)\ncomplete -c lobster -f\n",
    );
    let names: Vec<&str> = SUBCOMMANDS.iter().map(|s| s.name).collect();
    let no_sub = format!("not __fish_seen_subcommand_from {}", names.join(" "));
    for sub in SUBCOMMANDS {
        out.push_str(&format!(
            "complete -c lobster -n '{no_sub}' -a {} -d '{}'\n",
            sub.name,
            sub.summary.replace('\'', "\\'")
        ));
    }
    for cmd in crate::commands::builtin().iter() {
        let sig = cmd.signature();
        out.push_str(&format!(
            "complete -c lobster -n '{no_sub}' -a '{}' -d 'pipeline command: {}'\n",
            sig.name,
            sig.description.replace('\'', "\\'")
        ));
    }
    out.push_str(&format!(
        "complete -c lobster -n '{no_sub}' -F -a '(__fish_complete_suffix .lobster .yaml .yml .json)'\n"
    ));
    for sub in SUBCOMMANDS {
        let cond = format!("__fish_seen_subcommand_from {}", sub.name);
        for word in sub.words {
            out.push_str(&format!("complete -c lobster -n '{cond}' -a {word}\n"));
        }
        if sub.name == "help" {
            for topic in &names {
                out.push_str(&format!("complete -c lobster -n '{cond}' -a {topic}\n"));
            }
        }
        for flag in sub.flags {
            let long = flag.trim_start_matches('-');
            let arg = if DIR_FLAGS.contains(flag) {
                " -r -a '(__fish_complete_directories)'".to_string()
            } else if FILE_FLAGS.contains(flag) {
                " -r -F".to_string()
            } else if let Some(vals) = values_for(sub.name, flag) {
                format!(" -x -a '{}'", vals.join(" "))
            } else {
                String::new()
            };
            out.push_str(&format!("complete -c lobster -n '{cond}' -l {long}{arg}\n"));
        }
    }
    out.push_str(
        "complete -c lobster -n '__fish_is_first_arg' -l color -x -a 'auto always never'\n",
    );
    out.push_str("complete -c lobster -n '__fish_is_first_arg' -l store -r\n");
    out
}
