//! argv as the OS hands it over: bytes that need not be UTF-8. Every
//! subcommand parses `String`s, so a non-UTF-8 element is refused here, as a
//! parse error in the mode the command line asked for (exactly one envelope
//! in tool mode), instead of panicking in `std::env::args`.

use super::output::Printer;
use crate::error::Error;
use crate::kernel::Mode;
use std::ffi::OsString;

/// Convert `args` (without the program name) to UTF-8, or print a parse
/// error naming the first bad argument and return its exit code.
pub fn utf8_args(args: Vec<OsString>) -> Result<Vec<String>, i32> {
    let mut out = Vec::with_capacity(args.len());
    let mut bad = None;
    for (i, arg) in args.iter().enumerate() {
        match arg.to_str() {
            Some(s) => out.push(s.to_string()),
            None => {
                bad.get_or_insert(i);
                out.push(arg.to_string_lossy().into_owned());
            }
        }
    }
    let Some(i) = bad else {
        return Ok(out);
    };
    let shown: String = out[i].chars().take(80).collect();
    let err = Error::parse(format!(
        "argument {} is not valid UTF-8 ({shown:?} with U+FFFD for the bad bytes)",
        i + 1
    ))
    .with_hint("pass text as UTF-8; file names that are not UTF-8 are not supported");
    let printer = Printer {
        mode: mode_of(&out),
        max_bytes: None,
        text: None,
    };
    Err(printer.error(&err))
}

/// The output mode the (lossily decoded) command line asks for: `resume` and
/// `call` always answer with an envelope; others when `--mode tool` is given.
fn mode_of(args: &[String]) -> Mode {
    if matches!(
        args.first().map(String::as_str),
        Some("resume" | "call" | "doctor")
    ) {
        return Mode::Tool;
    }
    let tool = args.iter().enumerate().any(|(i, a)| {
        a == "--mode=tool" || (a == "--mode" && args.get(i + 1).is_some_and(|m| m == "tool"))
    });
    if tool {
        Mode::Tool
    } else {
        Mode::Human
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_arguments_pass_through() {
        let args = vec![OsString::from("run"), OsString::from("héllo")];
        assert_eq!(utf8_args(args).unwrap(), vec!["run", "héllo"]);
    }

    #[test]
    fn mode_follows_the_command_line() {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(mode_of(&s(&["resume", "--token", "x"])), Mode::Tool);
        assert_eq!(mode_of(&s(&["run", "--mode", "tool", "x"])), Mode::Tool);
        assert_eq!(mode_of(&s(&["run", "--mode=tool"])), Mode::Tool);
        assert_eq!(mode_of(&s(&["run", "x"])), Mode::Human);
    }
}
