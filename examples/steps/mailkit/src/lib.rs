//! Message files (`*.eml`, headers then a blank line then the body) as used
//! by the example inbox steps, and the item shape they exchange:
//! `{id, file, folder, from, to, subject, date, labels, body}`.

use lobster_guest::{json, Error, Value};
use std::path::{Path, PathBuf};

/// A parsed message file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// File stem, unique within the mailbox.
    pub id: String,
    /// File name.
    pub file: String,
    /// Folder below the mailbox root (`""` for the root).
    pub folder: String,
    /// `From:` header.
    pub from: String,
    /// `To:` header.
    pub to: String,
    /// `Subject:` header.
    pub subject: String,
    /// `Date:` header.
    pub date: String,
    /// `Labels:` header, comma-separated.
    pub labels: Vec<String>,
    /// Everything after the blank line.
    pub body: String,
}

/// Parse `text` of the file `file` in `folder`.
pub fn parse(file: &str, folder: &str, text: &str) -> Message {
    let (head, body) = match text.split_once("\n\n") {
        Some((h, b)) => (h, b),
        None => (text, ""),
    };
    let mut m = Message {
        id: file.strip_suffix(".eml").unwrap_or(file).to_string(),
        file: file.to_string(),
        folder: folder.to_string(),
        from: String::new(),
        to: String::new(),
        subject: String::new(),
        date: String::new(),
        labels: Vec::new(),
        body: body.trim_end().to_string(),
    };
    for line in head.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().to_string();
        match k.trim().to_ascii_lowercase().as_str() {
            "from" => m.from = v,
            "to" => m.to = v,
            "subject" => m.subject = v,
            "date" => m.date = v,
            "labels" => {
                m.labels = v
                    .split(',')
                    .map(|l| l.trim().to_string())
                    .filter(|l| !l.is_empty())
                    .collect()
            }
            _ => {}
        }
    }
    m
}

/// The message as file text.
pub fn render(m: &Message) -> String {
    format!(
        "From: {}\nTo: {}\nSubject: {}\nDate: {}\nLabels: {}\n\n{}\n",
        m.from,
        m.to,
        m.subject,
        m.date,
        m.labels.join(", "),
        m.body
    )
}

/// The message as a pipeline item.
pub fn to_item(m: &Message) -> Value {
    json!({
        "id": m.id,
        "file": m.file,
        "folder": m.folder,
        "from": m.from,
        "to": m.to,
        "subject": m.subject,
        "date": m.date,
        "labels": m.labels,
        "body": m.body,
    })
}

/// Text field `key` of an item (empty when absent).
pub fn field<'a>(item: &'a Value, key: &str) -> &'a str {
    item.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A folder or file name that stays inside its directory.
pub fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\\')
        && !name.contains('\0')
}

/// The path of `file` in `folder` under `root`.
pub fn path_of(root: &Path, folder: &str, file: &str) -> Result<PathBuf, Error> {
    if !safe_name(file) || (!folder.is_empty() && !safe_name(folder)) {
        return Err(Error::invalid_args(format!(
            "unsafe message path {folder}/{file}"
        )));
    }
    Ok(if folder.is_empty() {
        root.join(file)
    } else {
        root.join(folder).join(file)
    })
}

/// Every `*.eml` in `root/folder`, sorted by file name.
pub fn list(root: &Path, folder: &str) -> Result<Vec<Message>, Error> {
    let dir = if folder.is_empty() {
        root.to_path_buf()
    } else {
        if !safe_name(folder) {
            return Err(Error::invalid_args(format!(
                "unsafe folder name {folder:?}"
            )));
        }
        root.join(folder)
    };
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        Error::failed(format!(
            "cannot read {}: {e} (grant it with --allow-read DIR:{})",
            dir.display(),
            root.display()
        ))
    })?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".eml"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(&name))?;
            Ok(parse(&name, folder, &text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_render_round_trip() {
        let text = "From: A <a@x>\nTo: b@x\nSubject: Hi?\nDate: 2026-01-01\nLabels: inbox, work\n\nBody line\n";
        let m = parse("001-hi.eml", "", text);
        assert_eq!(m.id, "001-hi");
        assert_eq!(m.labels, ["inbox", "work"]);
        assert_eq!(m.body, "Body line");
        assert_eq!(render(&m), text);
    }
}
