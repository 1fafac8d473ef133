//! `inbox.apply`: labels and moves message files in the mailbox according
//! to each item's `category` / `triage`. Without `--apply` it only reports
//! the plan (an approval gate decides whether to pass `--apply`).
use lobster_guest::{json, log, Access, Args, Error, Flag, Step, StepInfo, Value};
use mailkit::{field, path_of, safe_name};
use std::path::Path;

struct Apply;

/// What will happen to one message.
struct Plan {
    id: String,
    file: String,
    folder: String,
    add_labels: Vec<String>,
    move_to: Option<String>,
}

fn plan(item: &Value, label_fields: &[&str], move_by: Option<&str>) -> Result<Plan, Error> {
    let file = field(item, "file");
    if file.is_empty() {
        return Err(Error::invalid_args(
            "inbox.apply needs items from inbox.list (no `file`)",
        ));
    }
    let existing: Vec<&str> = item
        .get("labels")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut add_labels = Vec::new();
    for f in label_fields {
        let l = field(item, f);
        if !l.is_empty() && !existing.contains(&l) && !add_labels.iter().any(|x| x == l) {
            add_labels.push(l.to_string());
        }
    }
    let folder = field(item, "folder").to_string();
    let move_to = match move_by.map(|k| field(item, k)) {
        Some(target) if !target.is_empty() && target != folder => {
            if !safe_name(target) {
                return Err(Error::invalid_args(format!(
                    "unsafe folder name {target:?}"
                )));
            }
            Some(target.to_string())
        }
        _ => None,
    };
    Ok(Plan {
        id: field(item, "id").to_string(),
        file: file.to_string(),
        folder,
        add_labels,
        move_to,
    })
}

fn execute(root: &Path, p: &Plan) -> Result<(), Error> {
    let from = path_of(root, &p.folder, &p.file)?;
    let text = std::fs::read_to_string(&from)
        .map_err(|e| Error::failed(format!("cannot read {}: {e}", from.display())))?;
    let mut m = mailkit::parse(&p.file, &p.folder, &text);
    m.labels.extend(p.add_labels.iter().cloned());
    let target_folder = p.move_to.clone().unwrap_or_else(|| p.folder.clone());
    let to = path_of(root, &target_folder, &p.file)?;
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::failed(format!(
                "cannot create {}: {e} (is /mail granted read-write?)",
                dir.display()
            ))
        })?;
    }
    // Write the relabelled message next to its destination, then swap it in.
    let tmp = to.with_extension("eml.tmp");
    std::fs::write(&tmp, mailkit::render(&m)).map_err(|e| {
        Error::failed(format!(
            "cannot write {}: {e} (is /mail granted read-write?)",
            tmp.display()
        ))
    })?;
    std::fs::rename(&tmp, &to).map_err(|e| Error::failed(format!("cannot rename: {e}")))?;
    if to != from {
        std::fs::remove_file(&from)
            .map_err(|e| Error::failed(format!("cannot remove {}: {e}", from.display())))?;
    }
    Ok(())
}

impl Step for Apply {
    fn describe() -> StepInfo {
        StepInfo::new(
            "inbox.apply",
            "0.1.0",
            "Label and move message files (dry run unless --apply)",
        )
        .flag(Flag::switch(
            "apply",
            "Really change the files (otherwise report the plan)",
        ))
        .flag(
            Flag::text(
                "label-from",
                "Comma-separated item fields whose values become labels",
            )
            .default("category,triage"),
        )
        .flag(Flag::text(
            "move-by",
            "Move each message into the folder named by this field",
        ))
        .needs_dir("/mail", Access::ReadWrite)
    }

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let apply = args.is_set("apply");
        let label_fields: Vec<&str> = args
            .str_or("label-from", "category,triage")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let move_by = args.str("move-by");
        let plans = items
            .iter()
            .map(|i| plan(i, &label_fields, move_by))
            .collect::<Result<Vec<_>, _>>()?;
        let root = Path::new("/mail");
        let mut out = Vec::with_capacity(plans.len());
        for p in &plans {
            let changes = !p.add_labels.is_empty() || p.move_to.is_some();
            if apply && changes {
                execute(root, p)?;
            }
            out.push(json!({
                "id": p.id,
                "file": p.file,
                "add_labels": p.add_labels,
                "move_to": p.move_to,
                "changes": changes,
                "applied": apply && changes,
            }));
        }
        let n = out.iter().filter(|o| o["changes"] == true).count();
        log::info(&format!(
            "{} {n} of {} messages",
            if apply { "changed" } else { "would change" },
            plans.len()
        ));
        Ok(out)
    }
}

lobster_guest::export_step!(Apply);
