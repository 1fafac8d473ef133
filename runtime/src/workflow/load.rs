//! Reading a workflow file: YAML (`.lobster`, `.yaml`, `.yml`) or JSON
//! (`.json`) into a JSON value, plus the line and column of every node and
//! every mapping key, so validation can say `<file>:<line>:<col>: <message>`.

use crate::error::{Error, Result};
use crate::sandbox::file_memo::{read_stamped, read_stamped_file, Stamp, MAX_ENTRIES};
use saphyr::{LoadableYamlNode, MarkedYamlOwned, ScalarOwned, YamlDataOwned};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// A 1-based line and column in the source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// One workflow file as read from disk.
#[derive(Debug, Clone)]
pub struct Source {
    /// The path as given (for messages).
    pub shown: String,
    /// The canonical absolute path.
    pub path: PathBuf,
    /// blake3 of the file's bytes, hex.
    pub digest: String,
}

/// The parsed document with positions keyed by JSON pointer
/// (`/steps/0/run`): `values` for nodes, `keys` for the key that names them.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    pub value: Value,
    pub values: HashMap<String, Pos>,
    pub keys: HashMap<String, Pos>,
}

impl Doc {
    /// Where the key of `pointer` is written, else its value, else the
    /// nearest enclosing node.
    pub fn key_pos(&self, pointer: &str) -> Pos {
        self.keys
            .get(pointer)
            .copied()
            .unwrap_or_else(|| self.value_pos(pointer))
    }

    /// Where the node at `pointer` (or its nearest ancestor) starts.
    pub fn value_pos(&self, pointer: &str) -> Pos {
        let mut p = pointer.to_string();
        loop {
            if let Some(pos) = self.values.get(&p) {
                return *pos;
            }
            match p.rfind('/') {
                Some(i) => p.truncate(i),
                None => return Pos { line: 1, col: 1 },
            }
        }
    }
}

/// Escape one JSON pointer segment.
pub fn seg(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Read, hash and parse `path` (`shown` is how messages name it); an
/// unchanged file is parsed once per process (see [`DocMemo`]).
pub fn load(path: &Path) -> Result<(Source, Arc<Doc>)> {
    read(path)?.parsed()
}

/// A workflow file as read: its source, the text its digest is of (what a
/// run's journal records as its request), and its document or why it does
/// not parse.
#[derive(Debug, Clone)]
pub struct Read {
    /// The file.
    pub source: Source,
    /// Its text, exactly the bytes `source.digest` is of.
    pub text: Arc<str>,
    /// Its parsed document, or the parse error.
    pub doc: Result<Arc<Doc>>,
}

impl Read {
    /// The source and document, or the parse error.
    pub fn parsed(self) -> Result<(Source, Arc<Doc>)> {
        Ok((self.source, self.doc?))
    }
}

/// [`load`] that keeps the text and a parse error apart from the read:
/// `Err` only when the file cannot be read.
pub fn read(path: &Path) -> Result<Read> {
    let shown = shown_of(path);
    if !super::has_workflow_extension(path) {
        return Err(Error::parse(format!(
            "Workflow file must end in .lobster, .yaml, .yml or .json: {shown}"
        )));
    }
    if !path.is_file() {
        return Err(Error::parse(format!("Workflow file not found: {shown}")));
    }
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let (digest, text, doc) = parsed(path, &shown, None)?;
    Ok(Read {
        source: Source {
            shown,
            path: canonical,
            digest,
        },
        text,
        doc,
    })
}

/// How the operator's messages name `path`: relative to the process's
/// directory when below it.
pub fn shown_of(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// [`load`] of a file already opened beneath the run's roots
/// ([`crate::kernel::Authority::open_file`]): the bytes come from `file`,
/// `path` is where it really is and `shown` how messages name it.
pub fn load_opened(path: &Path, shown: String, file: std::fs::File) -> Result<(Source, Arc<Doc>)> {
    read_opened(path, shown, file)?.parsed()
}

/// [`load_opened`] as [`read`] does it.
pub fn read_opened(path: &Path, shown: String, file: std::fs::File) -> Result<Read> {
    if !super::has_workflow_extension(path) {
        return Err(Error::parse(format!(
            "Workflow file must end in .lobster, .yaml, .yml or .json: {shown}"
        )));
    }
    let (digest, text, doc) = parsed(path, &shown, Some(file))?;
    Ok(Read {
        source: Source {
            shown,
            path: path.to_path_buf(),
            digest,
        },
        text,
        doc,
    })
}

/// Parsed documents by path, with the stamp of the file they were parsed
/// from: `lobster serve` runs the same catalog workflow many times, and
/// reading, hashing and parsing it per run is wasted work. An entry is used
/// only while the file's stamp (device, inode, size, modification and
/// change times in ns) is the same, and a file is remembered only when its
/// times are settled, by the rule of [`crate::sandbox::file_memo`]; the
/// digest and the text recorded with a run (its journal's request) are
/// those of the bytes the document was parsed from.
type DocMemo = Mutex<HashMap<PathBuf, Parsed>>;

/// A memo entry: the stamp, digest and text of a file, and its document.
type Parsed = (Stamp, String, Arc<str>, Arc<Doc>);

fn doc_memo() -> &'static DocMemo {
    static MEMO: OnceLock<DocMemo> = OnceLock::new();
    MEMO.get_or_init(Default::default)
}

/// The digest, text and parsed document (or the parse error) of the
/// workflow file at `path`.
fn parsed(
    path: &Path,
    shown: &str,
    file: Option<std::fs::File>,
) -> Result<(String, Arc<str>, Result<Arc<Doc>>)> {
    let read_error =
        |e: std::io::Error| Error::runtime(format!("cannot read workflow file {shown}: {e}"));
    let meta = match &file {
        Some(f) => f.metadata(),
        None => std::fs::metadata(path),
    };
    let stamp = Stamp::of(&meta.map_err(read_error)?);
    if let Some((known, digest, text, doc)) =
        doc_memo().lock().ok().and_then(|m| m.get(path).cloned())
    {
        if known == stamp {
            return Ok((digest, text, Ok(doc)));
        }
    }
    let (bytes, settled) = match file {
        Some(f) => read_stamped_file(f),
        None => read_stamped(path),
    }
    .map_err(read_error)?;
    let digest = blake3::hash(&bytes).to_hex().to_string();
    let text: Arc<str> = String::from_utf8(bytes)
        .map_err(|_| Error::parse(format!("{shown}: workflow file is not valid UTF-8")))?
        .into();
    let is_json = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let doc = match parse_text(&text, is_json, shown) {
        Ok(doc) => Arc::new(doc),
        Err(e) => return Ok((digest, text, Err(e))),
    };
    if let (Some(stamp), Ok(mut memo)) = (settled, doc_memo().lock()) {
        if memo.len() >= MAX_ENTRIES && !memo.contains_key(path) {
            memo.clear();
        }
        memo.insert(
            path.to_path_buf(),
            (stamp, digest.clone(), text.clone(), doc.clone()),
        );
    }
    Ok((digest, text, Ok(doc)))
}

/// Parse file text (JSON strictly when `is_json`, else YAML 1.2).
pub fn parse_text(text: &str, is_json: bool, shown: &str) -> Result<Doc> {
    let mut doc = Doc::default();
    if is_json {
        doc.value = serde_json::from_str(text).map_err(|e| {
            Error::parse(format!(
                "{shown}:{}:{}: invalid JSON: {e}",
                e.line(),
                e.column()
            ))
        })?;
        // Positions are best effort for JSON (it is YAML too).
        if let Ok(nodes) = MarkedYamlOwned::load_from_str(text) {
            if let Some(root) = nodes.first() {
                let mut scratch = Doc::default();
                if convert(root, "", &mut scratch, shown).is_ok() {
                    doc.values = scratch.values;
                    doc.keys = scratch.keys;
                }
            }
        }
    } else {
        let nodes = MarkedYamlOwned::load_from_str(text).map_err(|e| {
            let m = e.marker();
            Error::parse(format!(
                "{shown}:{}:{}: invalid YAML: {}",
                m.line(),
                m.col() + 1,
                e.info()
            ))
        })?;
        match nodes.first() {
            Some(root) => doc.value = convert(root, "", &mut doc, shown)?,
            None => doc.value = Value::Null,
        }
    }
    if !doc.value.is_object() {
        return Err(Error::parse(format!(
            "{shown}:1:1: Workflow file must be a JSON/YAML object"
        )));
    }
    Ok(doc)
}

fn pos_of(node: &MarkedYamlOwned) -> Pos {
    Pos {
        line: node.span.start.line(),
        col: node.span.start.col() + 1,
    }
}

fn convert(node: &MarkedYamlOwned, pointer: &str, doc: &mut Doc, shown: &str) -> Result<Value> {
    doc.values.insert(pointer.to_string(), pos_of(node));
    let at = |msg: &str| {
        let p = pos_of(node);
        Error::parse(format!("{shown}:{}:{}: {msg}", p.line, p.col))
    };
    Ok(match &node.data {
        YamlDataOwned::Value(s) => scalar(s).ok_or_else(|| at("numbers must be finite"))?,
        YamlDataOwned::Representation(text, _, _) => Value::String(text.clone()),
        YamlDataOwned::Sequence(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, n)| convert(n, &format!("{pointer}/{i}"), doc, shown))
                .collect::<Result<_>>()?,
        ),
        YamlDataOwned::Mapping(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let key = match &k.data {
                    YamlDataOwned::Value(ScalarOwned::String(s)) => s.clone(),
                    YamlDataOwned::Value(s) => match scalar(s) {
                        Some(Value::String(s)) => s,
                        Some(Value::Null) => "null".into(),
                        Some(other) => crate::value::js_to_string(Some(&other)),
                        None => return Err(at("mapping keys must be scalars")),
                    },
                    _ => {
                        let p = pos_of(k);
                        return Err(Error::parse(format!(
                            "{shown}:{}:{}: mapping keys must be scalars",
                            p.line, p.col
                        )));
                    }
                };
                let child = format!("{pointer}/{}", seg(&key));
                doc.keys.insert(child.clone(), pos_of(k));
                let value = convert(v, &child, doc, shown)?;
                out.insert(key, value);
            }
            Value::Object(out)
        }
        YamlDataOwned::Tagged(_, inner) => convert(inner, pointer, doc, shown)?,
        YamlDataOwned::Alias(_) => return Err(at("YAML aliases are not supported here")),
        YamlDataOwned::BadValue => return Err(at("invalid YAML value")),
    })
}

fn scalar(s: &ScalarOwned) -> Option<Value> {
    Some(match s {
        ScalarOwned::Null => Value::Null,
        ScalarOwned::Boolean(b) => Value::Bool(*b),
        ScalarOwned::Integer(i) => Value::Number((*i).into()),
        ScalarOwned::FloatingPoint(f) => Value::Number(Number::from_f64(f.into_inner())?),
        ScalarOwned::String(s) => Value::String(s.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_values_and_positions() {
        let text = "name: demo\nsteps:\n  - id: a\n    run: echo hi\n    timeout_ms: 5\n";
        let doc = parse_text(text, false, "wf.lobster").unwrap();
        assert_eq!(
            doc.value,
            json!({"name":"demo","steps":[{"id":"a","run":"echo hi","timeout_ms":5}]})
        );
        assert_eq!(doc.key_pos("/steps/0/run"), Pos { line: 4, col: 5 });
        assert_eq!(doc.value_pos("/steps/0/run"), Pos { line: 4, col: 10 });
        assert_eq!(doc.value_pos("/steps/0/nothing"), Pos { line: 3, col: 5 });
    }

    #[test]
    fn json_positions_and_errors() {
        let doc = parse_text(
            "{\n  \"steps\": [\n    {\"id\": \"a\"}\n  ]\n}",
            true,
            "w.json",
        )
        .unwrap();
        assert_eq!(doc.key_pos("/steps/0/id").line, 3);
        let e = parse_text("{\"steps\": [}", true, "w.json").unwrap_err();
        assert!(e.to_string().starts_with("w.json:1:"), "{e}");
        let e = parse_text("- a\n- b\n", false, "w.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "w.yaml:1:1: Workflow file must be a JSON/YAML object"
        );
        let e = parse_text("a: [1,\n", false, "w.yaml").unwrap_err();
        assert!(e.to_string().starts_with("w.yaml:"), "{e}");
    }

    #[test]
    fn an_unchanged_file_is_parsed_once_and_a_changed_one_again() {
        use crate::sandbox::file_memo::SETTLED;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w.lobster");
        std::fs::write(&file, "steps: [{id: a, run: echo 1}]\n").unwrap();
        let (s1, d1) = load(&file).unwrap();
        // Just written: not remembered, so an in-place rewrite of the same
        // size within the same clock tick is still seen.
        std::fs::write(&file, "steps: [{id: b, run: echo 1}]\n").unwrap();
        let (s2, d2) = load(&file).unwrap();
        assert_ne!(s1.digest, s2.digest);
        assert_eq!(d2.value["steps"][0]["id"], "b");
        assert!(!Arc::ptr_eq(&d1, &d2));
        std::thread::sleep(SETTLED + std::time::Duration::from_millis(50));
        let (_, d3) = load(&file).unwrap();
        let (s4, d4) = load(&file).unwrap();
        assert!(Arc::ptr_eq(&d3, &d4), "settled: parsed once");
        assert_eq!(s4.digest, s2.digest);
        // Changed (same size): parsed again.
        std::fs::write(&file, "steps: [{id: c, run: echo 1}]\n").unwrap();
        let (s5, d5) = load(&file).unwrap();
        assert_eq!(d5.value["steps"][0]["id"], "c");
        assert_ne!(s5.digest, s4.digest);
    }
}
