use lobster_guest::{json, log, state, Args, Error, Flag, Step, StepInfo, Value};

struct Greet;

impl Step for Greet {
    fn describe() -> StepInfo {
        StepInfo::new("greet", "0.1.0", "Add a greeting to every item")
            .flag(Flag::text("name", "Who to greet").default("world"))
            .flag(Flag::switch("shout", "Upper-case the greeting"))
            .flag(Flag::number("times", "Repeat the greeting").default("1"))
    }

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let name = args.str_or("name", "world");
        let times = args.number("times")?.unwrap_or(1.0);
        if !(1.0..=10.0).contains(&times) {
            return Err(Error::invalid_args("--times must be between 1 and 10"));
        }
        let mut greeting = format!("hello {name}! ").repeat(times as usize);
        if args.is_set("shout") {
            greeting = greeting.to_uppercase();
        }
        // State survives between runs of this step in the same workflow/run scope.
        let runs = state::get("runs")?.and_then(|v| v.as_u64()).unwrap_or(0) + 1;
        state::set("runs", &json!(runs))?;
        log::info(&format!("greeting {} items (run {runs})", items.len()));
        Ok(items
            .into_iter()
            .map(|item| json!({ "greeting": greeting.trim_end(), "item": item }))
            .collect())
    }
}

lobster_guest::export_step!(Greet);
