//! `inbox.list`: the messages in the granted mailbox directory as items
//! `{id, file, folder, from, to, subject, date, labels, body}`.
use lobster_guest::{Access, Args, Error, Flag, Step, StepInfo, Value};
use std::path::Path;

struct InboxList;

impl Step for InboxList {
    fn describe() -> StepInfo {
        StepInfo::new(
            "inbox.list",
            "0.1.0",
            "List the messages in the mailbox directory",
        )
        .flag(Flag::text(
            "folder",
            "Subfolder to list (default: the mailbox root)",
        ))
        .flag(Flag::text("label", "Only messages with this label"))
        .flag(Flag::number("limit", "At most this many messages"))
        .needs_dir("/mail", Access::Read)
    }

    fn run(args: Args, _items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let folder = args.str_or("folder", "");
        let limit = match args.number("limit")? {
            Some(n) if n >= 0.0 => n as usize,
            Some(_) => return Err(Error::invalid_args("--limit must not be negative")),
            None => usize::MAX,
        };
        let label = args.str("label");
        let messages = mailkit::list(Path::new("/mail"), folder)?;
        Ok(messages
            .iter()
            .filter(|m| label.is_none_or(|l| m.labels.iter().any(|x| x == l)))
            .take(limit)
            .map(mailkit::to_item)
            .collect())
    }
}

lobster_guest::export_step!(InboxList);
