//! The two steps every hand-parsed subcommand shares: splitting a
//! `--name=value` element, and reading a flag's value from it or from the
//! next argv element.

/// `--name=value` → (`--name`, `Some("value")`); any other element → (itself, `None`).
/// The split is at the first `=`, so `--k=a=b` has the value `a=b`.
pub fn split_flag(tok: &str) -> (&str, Option<String>) {
    match tok.split_once('=') {
        Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
        _ => (tok, None),
    }
}

/// The flag's value: the inline `=value`, else `argv[*next]`, which is then
/// consumed (`*next` advances). `None` when neither exists.
pub fn take_value(inline: Option<String>, argv: &[String], next: &mut usize) -> Option<String> {
    inline.or_else(|| {
        let value = argv.get(*next).cloned();
        if value.is_some() {
            *next += 1;
        }
        value
    })
}

/// Parse a non-negative integer flag value.
pub fn parse_count(flag: &str, value: &str) -> crate::error::Result<u64> {
    value.trim().parse::<u64>().map_err(|_| {
        crate::error::Error::parse(format!(
            "{flag} must be a non-negative integer (got {value:?})"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_take() {
        assert_eq!(split_flag("--k=a=b"), ("--k", Some("a=b".to_string())));
        assert_eq!(split_flag("--k"), ("--k", None));
        assert_eq!(split_flag("x=y"), ("x=y", None));
        let argv: Vec<String> = ["--k", "v"].iter().map(|s| s.to_string()).collect();
        let mut next = 1;
        assert_eq!(take_value(None, &argv, &mut next), Some("v".to_string()));
        assert_eq!(next, 2);
        assert_eq!(take_value(None, &argv, &mut next), None);
        assert_eq!(next, 2);
        assert_eq!(
            take_value(Some("i".into()), &argv, &mut next),
            Some("i".to_string())
        );
        assert_eq!(next, 2);
    }
}
