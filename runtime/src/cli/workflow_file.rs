//! Recognising workflow file paths on the command line (the files themselves
//! are run by the workflow layer).

use std::path::Path;

/// Extensions a workflow file may have (case-insensitive).
pub const WORKFLOW_EXTENSIONS: [&str; 4] = ["lobster", "yaml", "yml", "json"];

/// Whether `candidate` is an existing regular file with a workflow extension.
pub fn looks_like_workflow(candidate: &str) -> bool {
    let path = Path::new(candidate);
    has_workflow_extension(path) && path.is_file()
}

/// Whether the path ends in a workflow extension.
pub fn has_workflow_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| WORKFLOW_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}
