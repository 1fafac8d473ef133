//! The arguments of the built-in tools as typed wire structs, one per tool
//! ([`RunArgs`], [`ResumeArgs`], [`WorkflowsArgs`]), each converted with
//! `TryFrom` into the one [`crate::app`] request. A workflow's own tool
//! takes its args as they come (a map, checked by the workflow's schema).
//!
//! The structs are the published input schemas of [`super::tools`]: a key
//! that is not one of a struct's fields is refused by [`parse`] naming every
//! such key and the ones the tool takes, and a test ties every schema
//! property to a field (and back), required-ness included.

use super::tools::RUN;
use crate::app::request::{cwd, limits, Lenient, ResumeFields};
use crate::app::{RunRequest, RunTarget};
use crate::error::{Error, Result};
use crate::value::Item;
use rmcp::model::JsonObject;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// `lobster_run`: a pipeline or a workflow (file or catalog name), its
/// args, directory and limits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunArgs {
    /// Pipeline text; exactly one of pipeline and workflow (blank is absent).
    pub pipeline: Option<Lenient<String>>,
    /// A workflow file or a catalog workflow's name.
    pub workflow: Option<Lenient<String>>,
    /// Workflow args as an object.
    pub args: Option<Lenient<Map<String, Item>>>,
    /// Workflow args as JSON text (instead of args).
    pub args_json: Option<Lenient<String>>,
    /// Working directory, relative and inside the server's.
    pub cwd: Option<Lenient<String>>,
    /// Whole-run timeout in milliseconds.
    pub timeout_ms: Option<Lenient<f64>>,
    /// Cap on the envelope's size in bytes.
    pub max_stdout_bytes: Option<Lenient<f64>>,
}

/// `lobster_resume`: the resume fields every door shares (token or
/// approvalId; approve, response or cancel; approver; limits).
pub type ResumeArgs = ResumeFields;

/// `lobster_workflows`: no arguments.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowsArgs {}

impl TryFrom<RunArgs> for RunRequest {
    type Error = Error;

    /// Refusals in order: a non-string pipeline or workflow, both or
    /// neither, args not an object, argsJson not a string, then cwd's and
    /// the limits'.
    fn try_from(a: RunArgs) -> Result<RunRequest> {
        let text = |key: &str, field: Option<Lenient<String>>| match field {
            None => Ok(None),
            Some(Lenient::Is(s)) if s.trim().is_empty() => Ok(None),
            Some(Lenient::Is(s)) => Ok(Some(s)),
            Some(Lenient::Other(_)) => Err(Error::parse(format!("{RUN} {key} must be a string"))),
        };
        let target = match (text("pipeline", a.pipeline)?, text("workflow", a.workflow)?) {
            (Some(p), None) => RunTarget::Pipeline(p),
            (None, Some(w)) => RunTarget::Workflow(w),
            (Some(_), Some(_)) => {
                return Err(Error::parse(format!(
                    "{RUN} takes pipeline or workflow, not both"
                )))
            }
            (None, None) => return Err(Error::parse(format!("{RUN} needs pipeline or workflow"))),
        };
        let args = match a.args {
            None => None,
            Some(Lenient::Is(m)) => Some(m),
            Some(Lenient::Other(_)) => {
                return Err(Error::parse(format!("{RUN} args must be an object")))
            }
        };
        let args_json = match a.args_json {
            None => None,
            Some(Lenient::Is(s)) => Some(s),
            Some(Lenient::Other(_)) => {
                return Err(Error::parse(format!("{RUN} argsJson must be a string")))
            }
        };
        Ok(RunRequest {
            target,
            args,
            args_json,
            cwd: cwd(a.cwd)?,
            limits: limits(a.timeout_ms, a.max_stdout_bytes)?,
            strict_args: false,
            mode: crate::kernel::Mode::Tool,
        })
    }
}

/// A tool's arguments as its wire struct. Keys that are not the struct's
/// fields are refused first, all of them named:
/// `<tool> does not take <keys> (it takes <fields>)`.
pub fn parse<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T> {
    let known = field_names::<T>();
    let unknown: Vec<&str> = args
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(Error::parse(format!(
            "{tool} does not take {} (it takes {})",
            unknown.join(", "),
            known.join(", ")
        )));
    }
    T::deserialize(Value::Object(args)).map_err(|e| Error::parse(format!("{tool}: {e}")))
}

/// The wire names of a derived struct's fields, in declaration order: what
/// serde's derive hands to `deserialize_struct`, caught by a deserializer
/// that reads nothing.
pub fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(
            self,
            _: V,
        ) -> std::result::Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> std::result::Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::super::tools::{self, RESUME, WORKFLOWS};
    use super::*;
    use crate::app::{Catalog, ResumeCall};
    use serde_json::json;

    fn object(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => panic!("an object"),
        }
    }

    /// A value of a schema property's type.
    fn sample(schema: &Value) -> Value {
        match schema["type"].as_str() {
            Some("string") => json!("x"),
            Some("integer") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            other => panic!("no sample for type {other:?}"),
        }
    }

    /// Every property of `tool`'s published input schema is a field of `T`
    /// and every field a property, in the same order; a property is
    /// required by the schema exactly when `T` refuses an object without it;
    /// unknown keys are refused by both.
    fn ties<T: DeserializeOwned + std::fmt::Debug>(tool: &str) {
        let listed = tools::all(&Catalog::default(), false);
        let schema = listed
            .iter()
            .find(|t| t.name == tool)
            .map(|t| Value::Object((*t.input_schema).clone()))
            .unwrap();
        let props = schema["properties"].as_object().unwrap();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            field_names::<T>(),
            "{tool}: schema properties vs fields"
        );
        assert_eq!(schema["additionalProperties"], json!(false), "{tool}");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let full: JsonObject = props.iter().map(|(k, s)| (k.clone(), sample(s))).collect();
        assert!(
            T::deserialize(Value::Object(full.clone())).is_ok(),
            "{tool}: the schema's sample"
        );
        for key in props.keys() {
            let mut without = full.clone();
            without.remove(key);
            assert_eq!(
                T::deserialize(Value::Object(without)).is_err(),
                required.contains(&key.as_str()),
                "{tool}: required-ness of {key}"
            );
        }
        let mut extra = full;
        extra.insert("bogus".into(), json!(1));
        let e = parse::<T>(tool, extra).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{tool} does not take bogus (it takes {})", names.join(", "))
        );
    }

    #[test]
    fn structs_are_the_published_schemas() {
        ties::<RunArgs>(RUN);
        ties::<ResumeArgs>(RESUME);
        ties::<WorkflowsArgs>(WORKFLOWS);
    }

    fn run(v: Value) -> Result<RunRequest> {
        RunRequest::try_from(parse::<RunArgs>(RUN, object(v))?)
    }

    #[test]
    fn run_refusals_keep_their_text() {
        let err = |v: Value| run(v).unwrap_err().to_string();
        assert_eq!(
            err(json!({"pipeline": "head", "x": 1, "y": 2})),
            "lobster_run does not take x, y (it takes pipeline, workflow, args, argsJson, cwd, timeoutMs, maxStdoutBytes)"
        );
        assert_eq!(
            err(json!({"pipeline": 1})),
            "lobster_run pipeline must be a string"
        );
        assert_eq!(
            err(json!({"pipeline": "head", "workflow": false})),
            "lobster_run workflow must be a string"
        );
        assert_eq!(
            err(json!({"pipeline": "head", "workflow": "w"})),
            "lobster_run takes pipeline or workflow, not both"
        );
        assert_eq!(
            err(json!({"pipeline": " ", "workflow": null})),
            "lobster_run needs pipeline or workflow"
        );
        assert_eq!(
            err(json!({"workflow": "w", "args": [1]})),
            "lobster_run args must be an object"
        );
        assert_eq!(
            err(json!({"workflow": "w", "argsJson": {}})),
            "lobster_run argsJson must be a string"
        );
        assert_eq!(
            err(json!({"workflow": "w", "cwd": 1})),
            "cwd must be a relative path"
        );
        assert_eq!(
            err(json!({"workflow": "w", "timeoutMs": "1"})),
            "timeoutMs must be a number"
        );
    }

    #[test]
    fn run_args_become_the_app_request() {
        let r = run(json!({
            "workflow": "w.lobster", "args": {"n": 1}, "cwd": "sub",
            "timeoutMs": 5000, "maxStdoutBytes": null, "pipeline": ""
        }))
        .unwrap();
        assert_eq!(r.target, RunTarget::Workflow("w.lobster".into()));
        assert_eq!(r.args, Some(object(json!({"n": 1}))));
        assert_eq!(r.cwd.as_deref(), Some("sub"));
        assert_eq!(r.limits.timeout_ms, Some(5000));
        assert_eq!(r.limits.max_stdout_bytes, None);
        assert!(!r.strict_args);
        let r = run(json!({"pipeline": "head", "argsJson": "{}"})).unwrap();
        assert_eq!(r.target, RunTarget::Pipeline("head".into()));
        assert_eq!(r.args_json.as_deref(), Some("{}"));
    }

    #[test]
    fn resume_and_workflows_refuse_unknown_keys() {
        let e = parse::<ResumeArgs>(
            RESUME,
            object(json!({"token": "t", "approve": true, "who": "me"})),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "lobster_resume does not take who (it takes token, approvalId, approve, response, cancel, approver, timeoutMs, maxStdoutBytes)"
        );
        let ok =
            parse::<ResumeArgs>(RESUME, object(json!({"token": "t", "approve": true}))).unwrap();
        assert!(ResumeCall::try_from(ok).is_ok());
        let e = parse::<WorkflowsArgs>(WORKFLOWS, object(json!({"all": true})))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "lobster_workflows does not take all (it takes )");
        assert!(parse::<WorkflowsArgs>(WORKFLOWS, JsonObject::new()).is_ok());
    }
}
