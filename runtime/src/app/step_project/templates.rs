//! The files `lobster step new` writes, per language: a `greet` step with
//! one working flag (`--name`), its examples (the test) and a README.

use super::Lang;
use std::path::Path;

const EXAMPLES: &str = r#"[
  {
    "name": "greets with --name",
    "args": ["--name", "Ada"],
    "input": [{"id": 1}],
    "output": [{"id": 1, "greeting": "hello Ada"}]
  },
  {
    "name": "greets the world by default",
    "args": [],
    "input": [{"id": 2}],
    "output": [{"id": 2, "greeting": "hello world"}]
  }
]
"#;

/// `(relative path, contents)` of every file of a new project.
pub fn files(lang: Lang, name: &str, slug: &str, sdk: &Path) -> Vec<(String, String)> {
    let sdk = sdk.display();
    let crate_name = slug.replace('-', "_");
    let mut v: Vec<(String, String)> = Vec::new();
    let readme_common = format!(
        "# {name}\n\nA Lobster step. `lobster step build` builds it, `lobster step test` runs the\n\
         examples in `examples.json` (args + input items → expected items) in the sandbox.\n\
         Run it in a pipeline:\n\n```sh\necho '[{{\"id\":1}}]' > items.json\nlobster --steps DIR-OF-THE-WASM 'exec --json cat items.json | {name} --name Ada'\n```\n\n"
    );
    match lang {
        Lang::Rust => {
            v.push((
                "lobster-step.toml".into(),
                format!("name = \"{name}\"\nlang = \"rust\"\nwasm = \"target/wasm32-wasip2/release/{crate_name}.wasm\"\n"),
            ));
            v.push((
                "Cargo.toml".into(),
                format!(
                    "[package]\nname = \"{slug}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n\n\
                     [dependencies]\nlobster-guest = {{ path = \"{sdk}\" }}\n\n\
                     # A workspace of its own, so a parent directory's workspace does not claim it.\n[workspace]\n\n\
                     [profile.release]\nopt-level = \"s\"\nlto = true\ncodegen-units = 1\nstrip = true\npanic = \"abort\"\n"
                ),
            ));
            v.push((
                "src/lib.rs".into(),
                format!(
                    r#"//! `{name}`: adds a greeting to every item.
use lobster_guest::{{Args, Error, Flag, Step, StepInfo, Value}};

pub struct Greet;

impl Step for Greet {{
    fn describe() -> StepInfo {{
        StepInfo::new("{name}", "0.1.0", "Add a greeting to every item")
            .flag(Flag::text("name", "Who to greet").default("world"))
    }}

    fn run(args: Args, items: Vec<Value>) -> Result<Vec<Value>, Error> {{
        let greeting = Value::from(format!("hello {{}}", args.str_or("name", "world")));
        Ok(items
            .into_iter()
            .map(|item| match item {{
                Value::Object(mut obj) => {{
                    obj.insert("greeting".into(), greeting.clone());
                    Value::Object(obj)
                }}
                other => lobster_guest::json!({{ "item": other, "greeting": greeting.clone() }}),
            }})
            .collect())
    }}
}}

lobster_guest::export_step!(Greet);

#[cfg(test)]
mod tests {{
    #[test]
    fn examples() {{
        lobster_guest::check_examples::<super::Greet>(include_str!("../examples.json")).unwrap();
    }}
}}
"#
                ),
            ));
            v.push(("examples.json".into(), EXAMPLES.into()));
            v.push((
                "README.md".into(),
                format!(
                    "{readme_common}## Build and test\n\n```sh\nrustup target add wasm32-wasip2\nlobster step build   # cargo build --release --target wasm32-wasip2\nlobster step test    # the examples, in the sandbox\ncargo test           # the same examples, natively\n```\n\nThe component is `target/wasm32-wasip2/release/{crate_name}.wasm`.\n"
                ),
            ));
        }
        Lang::Python => {
            v.push((
                "lobster-step.toml".into(),
                format!("name = \"{name}\"\nlang = \"python\"\nentry = \"app.py\"\nwasm = \"{slug}.wasm\"\n"),
            ));
            v.push((
                "app.py".into(),
                format!(
                    r#""""{name}: adds a greeting to every item."""

from lobster_step import Flag, step


@step(
    "{name}",
    version="0.1.0",
    summary="Add a greeting to every item",
    flags=[Flag.text("name", "Who to greet", default="world")],
)
def run(args, items):
    greeting = f"hello {{args.str('name', 'world')}}"
    return [
        {{**item, "greeting": greeting}} if isinstance(item, dict) else {{"item": item, "greeting": greeting}}
        for item in items
    ]
"#
                ),
            ));
            v.push(("examples.json".into(), EXAMPLES.into()));
            v.push(("README.md".into(), format!(
                "{readme_common}## Build and test\n\nOnce, install the SDK (it pins componentize-py) into a virtual environment here:\n\n```sh\npython3 -m venv .venv\n.venv/bin/pip install {sdk}/python\n```\n\nThen:\n\n```sh\nlobster step build   # ~20 s: componentize-py, an ~18 MB component\nlobster step test    # the examples, in the sandbox (the first run compiles for ~16 s, then it is cached)\n```\n\nRaise `lobster_step.InvalidArgs` or `lobster_step.Failed` to fail the step; any other\nexception becomes `failed(\"Type: message (at file:line in fn)\")`.\n"
            )));
        }
        Lang::Js => {
            v.push((
                "lobster-step.toml".into(),
                format!("name = \"{name}\"\nlang = \"js\"\nentry = \"step.ts\"\nwasm = \"{slug}.wasm\"\n"),
            ));
            v.push((
                "package.json".into(),
                format!(
                    "{{\n  \"name\": \"{slug}\",\n  \"private\": true,\n  \"type\": \"module\",\n  \"devDependencies\": {{\n    \"lobster-step\": \"file:{sdk}/js\"\n  }}\n}}\n"
                ),
            ));
            // Copy the SDK into node_modules instead of linking it: its build
            // script then finds esbuild and componentize-qjs beside it.
            v.push((".npmrc".into(), "install-links=true\n".into()));
            v.push((
                "step.ts".into(),
                format!(
                    r#"// {name}: adds a greeting to every item.
import {{ defineStep, Flag }} from "lobster-step";

export default defineStep({{
  name: "{name}",
  version: "0.1.0",
  summary: "Add a greeting to every item",
  flags: [Flag.text("name", "Who to greet", "world")],
  run(args, items) {{
    const greeting = `hello ${{args.str("name", "world")}}`;
    return items.map((item) =>
      item !== null && typeof item === "object" && !Array.isArray(item)
        ? {{ ...item, greeting }}
        : {{ item, greeting }},
    );
  }},
}});
"#
                ),
            ));
            v.push(("examples.json".into(), EXAMPLES.into()));
            v.push(("README.md".into(), format!(
                "{readme_common}## Build and test\n\nOnce, install the SDK (it pins componentize-qjs and esbuild) here:\n\n```sh\nnpm install\n```\n\nThen:\n\n```sh\nlobster step build   # esbuild bundles step.ts with the SDK, componentize-qjs --sync builds a ~1.7 MB component\nlobster step test    # the examples, in the sandbox\n```\n\n`console.log` goes to the host log. Throw `InvalidArgs` or `Failed` to fail the\nstep; any other exception becomes `failed(\"Name: message (at …)\")`.\n"
            )));
        }
    }
    v
}
