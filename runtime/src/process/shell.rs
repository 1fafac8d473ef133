//! Which program runs a shell line (`exec --shell`, workflow `run:` steps).
//!
//! The default is `/bin/sh -c <line>`. The reference uses `/bin/sh -lc`, a
//! *login* shell that sources `/etc/profile` and `~/.profile`, which can reset
//! `PATH` and makes runs depend on the user's profile; Lobster does not (see
//! `docs/COMPATIBILITY.md`). `LOBSTER_SHELL` (read from the run's environment,
//! trimmed) replaces the program, with arguments chosen by its name.

use std::collections::BTreeMap;

/// The default shell program.
pub const DEFAULT_SHELL: &str = "/bin/sh";

/// The environment variable that overrides the shell.
pub const SHELL_OVERRIDE_VAR: &str = "LOBSTER_SHELL";

/// A program and its argv that together run one shell line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCommand {
    pub program: String,
    pub args: Vec<String>,
}

/// How `line` is run given the run's environment `env`.
///
/// - no (or blank) `LOBSTER_SHELL`: `/bin/sh -c <line>`;
/// - a name ending in `pwsh`, `pwsh.exe`, `powershell` or `powershell.exe`
///   (case-insensitive): `<shell> -NoProfile -Command <line>`;
/// - a name ending in `cmd` or `cmd.exe`: `<shell> /d /s /c <line>` (as the reference);
/// - anything else: `<shell> -c <line>`.
pub fn shell_command(line: &str, env: &BTreeMap<String, String>) -> ShellCommand {
    let chosen = env
        .get(SHELL_OVERRIDE_VAR)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty());
    let Some(shell) = chosen else {
        return ShellCommand {
            program: DEFAULT_SHELL.to_string(),
            args: vec!["-c".to_string(), line.to_string()],
        };
    };
    let lowered = shell.to_lowercase();
    let ends = |suffixes: &[&str]| suffixes.iter().any(|s| lowered.ends_with(s));
    let mut args: Vec<String> = if ends(&["powershell", "powershell.exe", "pwsh", "pwsh.exe"]) {
        vec!["-NoProfile".into(), "-Command".into()]
    } else if ends(&["cmd", "cmd.exe"]) {
        vec!["/d".into(), "/s".into(), "/c".into()]
    } else {
        vec!["-c".into()]
    };
    args.push(line.to_string());
    ShellCommand {
        program: shell.to_string(),
        args,
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

    fn argv(c: &ShellCommand) -> Vec<&str> {
        std::iter::once(c.program.as_str())
            .chain(c.args.iter().map(String::as_str))
            .collect()
    }

    #[test]
    fn default_is_posix_sh_without_login() {
        // $SHELL is not consulted.
        let c = shell_command("echo hi", &env(&[("SHELL", "/bin/zsh")]));
        assert_eq!(argv(&c), ["/bin/sh", "-c", "echo hi"]);
    }

    #[test]
    fn blank_override_is_ignored() {
        let c = shell_command("x", &env(&[("LOBSTER_SHELL", "   ")]));
        assert_eq!(argv(&c), ["/bin/sh", "-c", "x"]);
    }

    #[test]
    fn powershell_override() {
        for name in ["pwsh", "/usr/bin/pwsh", "PowerShell.exe", " pwsh "] {
            let c = shell_command("Write-Host hi", &env(&[("LOBSTER_SHELL", name)]));
            assert_eq!(c.program, name.trim());
            assert_eq!(c.args, ["-NoProfile", "-Command", "Write-Host hi"]);
        }
    }

    #[test]
    fn cmd_override() {
        let c = shell_command("dir", &env(&[("LOBSTER_SHELL", "C:\\Windows\\cmd.exe")]));
        assert_eq!(c.args, ["/d", "/s", "/c", "dir"]);
    }

    #[test]
    fn other_override_gets_dash_c() {
        let c = shell_command("echo $0", &env(&[("LOBSTER_SHELL", "/bin/bash")]));
        assert_eq!(argv(&c), ["/bin/bash", "-c", "echo $0"]);
    }
}
