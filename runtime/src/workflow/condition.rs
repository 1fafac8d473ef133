//! The `when`/`condition` language (spec §1.9), strict semantics:
//! `||`, `&&`, one non-associative comparison (`== != < <= > >=`), `!`,
//! parentheses, `$step.path` refs, quoted strings, numbers, `true`,
//! `false`, `null`, and bare identifiers only on the right of a comparison.
//! Equality is structural without coercion (`"10" == 10` is false); ordering
//! applies only when both sides are numeric.

use super::template::Scope;
use crate::error::{Error, Result};
use crate::value::{get_path, string_to_number, Item};

/// A parsed condition expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Ref { id: String, path: String },
    Lit(Item),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Op(&'static str),
    Ref(String, String),
    Lit(Item),
    Ident(String),
}

fn unsupported(text: &str) -> Error {
    Error::parse(format!("Unsupported condition: {text}"))
}

fn lex(text: &str) -> Result<Vec<Tok>> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
            continue;
        }
        let two: String = c[i..(i + 2).min(c.len())].iter().collect();
        if let Some(op) = ["||", "&&", "==", "!=", "<=", ">="]
            .into_iter()
            .find(|o| *o == two)
        {
            out.push(Tok::Op(op));
            i += 2;
            continue;
        }
        if let Some(op) = ["<", ">", "!", "(", ")"]
            .into_iter()
            .find(|o| o.starts_with(ch))
        {
            out.push(Tok::Op(op));
            i += 1;
            continue;
        }
        if ch == '"' || ch == '\'' {
            let mut s = String::new();
            let mut j = i + 1;
            let mut closed = false;
            while j < c.len() {
                if c[j] == '\\' && j + 1 < c.len() {
                    s.push(c[j + 1]);
                    j += 2;
                    continue;
                }
                if c[j] == ch {
                    closed = true;
                    break;
                }
                s.push(c[j]);
                j += 1;
            }
            if !closed {
                return Err(unsupported(text));
            }
            out.push(Tok::Lit(Item::String(s)));
            i = j + 1;
            continue;
        }
        if ch == '$' {
            let rest: String = c[i..].iter().collect();
            let pieces = super::template::pieces(&rest);
            if let Some(super::template::Piece::Ref { id, path, raw }) = pieces.first() {
                out.push(Tok::Ref(id.clone(), path.clone()));
                i += raw.chars().count();
                continue;
            }
            return Err(unsupported(text));
        }
        if ch.is_ascii_digit() || (ch == '-' && c.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let mut j = i + 1;
            while j < c.len() && c[j].is_ascii_digit() {
                j += 1;
            }
            if c.get(j) == Some(&'.') && c.get(j + 1).is_some_and(char::is_ascii_digit) {
                j += 1;
                while j < c.len() && c[j].is_ascii_digit() {
                    j += 1;
                }
            }
            let s: String = c[i..j].iter().collect();
            let n: f64 = s.parse().map_err(|_| unsupported(text))?;
            let num = if n.fract() == 0.0 && n.abs() < 9.0e15 {
                Item::from(n as i64)
            } else {
                serde_json::Number::from_f64(n).map_or(Item::Null, Item::Number)
            };
            out.push(Tok::Lit(num));
            i = j;
            continue;
        }
        if ch.is_ascii_alphabetic() || ch == '_' {
            let mut j = i + 1;
            while j < c.len() && (c[j].is_ascii_alphanumeric() || c[j] == '_' || c[j] == '-') {
                j += 1;
            }
            let word: String = c[i..j].iter().collect();
            out.push(match word.as_str() {
                "true" => Tok::Lit(Item::Bool(true)),
                "false" => Tok::Lit(Item::Bool(false)),
                "null" => Tok::Lit(Item::Null),
                _ => Tok::Ident(word),
            });
            i = j;
            continue;
        }
        return Err(unsupported(text));
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    i: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.i) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }
    fn or(&mut self) -> Result<Expr> {
        let mut left = self.and()?;
        while self.peek_op() == Some("||") {
            self.i += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }
    fn and(&mut self) -> Result<Expr> {
        let mut left = self.cmp()?;
        while self.peek_op() == Some("&&") {
            self.i += 1;
            left = Expr::And(Box::new(left), Box::new(self.cmp()?));
        }
        Ok(left)
    }
    fn cmp(&mut self) -> Result<Expr> {
        let left = self.unary()?;
        let op = match self.peek_op() {
            Some("==") => CmpOp::Eq,
            Some("!=") => CmpOp::Ne,
            Some("<") => CmpOp::Lt,
            Some("<=") => CmpOp::Le,
            Some(">") => CmpOp::Gt,
            Some(">=") => CmpOp::Ge,
            _ => return Ok(left),
        };
        self.i += 1;
        let right = match self.toks.get(self.i) {
            Some(Tok::Ident(word)) => {
                let w = word.clone();
                self.i += 1;
                Expr::Lit(Item::String(w))
            }
            _ => self.unary()?,
        };
        Ok(Expr::Cmp(op, Box::new(left), Box::new(right)))
    }
    fn unary(&mut self) -> Result<Expr> {
        if self.peek_op() == Some("!") {
            self.i += 1;
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        self.primary()
    }
    fn primary(&mut self) -> Result<Expr> {
        let tok = self.toks.get(self.i).cloned();
        self.i += 1;
        match tok {
            Some(Tok::Op("(")) => {
                let inner = self.or()?;
                if self.peek_op() != Some(")") {
                    return Err(unsupported(self.text));
                }
                self.i += 1;
                Ok(inner)
            }
            Some(Tok::Ref(id, path)) => Ok(Expr::Ref { id, path }),
            Some(Tok::Lit(v)) => Ok(Expr::Lit(v)),
            _ => Err(unsupported(self.text)),
        }
    }
}

/// Parse a condition expression.
pub fn parse(text: &str) -> Result<Expr> {
    let toks = lex(text)?;
    let mut p = Parser { toks, i: 0, text };
    let e = p.or()?;
    if p.i != p.toks.len() {
        return Err(unsupported(text));
    }
    Ok(e)
}

/// A `when`/`condition` value: a constant or an expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    Const(bool),
    Expr { text: String, expr: Expr },
}

impl Condition {
    /// From the file's value: a boolean, `"true"`/`"false"`, or an expression.
    pub fn from_value(v: &Item) -> Result<Self> {
        match v {
            Item::Bool(b) => Ok(Condition::Const(*b)),
            Item::String(s) => match s.trim() {
                "true" => Ok(Condition::Const(true)),
                "false" => Ok(Condition::Const(false)),
                _ => Ok(Condition::Expr {
                    text: s.clone(),
                    expr: parse(s)?,
                }),
            },
            _ => Err(Error::parse("Unsupported condition type")),
        }
    }

    /// Every step ref the condition reads.
    pub fn refs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Condition::Expr { expr, .. } = self {
            collect_refs(expr, &mut out);
        }
        out
    }

    /// The text as written (`true`/`false` for constants).
    pub fn text(&self) -> String {
        match self {
            Condition::Const(b) => b.to_string(),
            Condition::Expr { text, .. } => text.clone(),
        }
    }

    /// Evaluate against `scope` (unknown step ids are errors).
    pub fn eval(&self, scope: &dyn Scope) -> Result<bool> {
        match self {
            Condition::Const(b) => Ok(*b),
            Condition::Expr { expr, .. } => Ok(truthy(eval(expr, scope)?.as_ref())),
        }
    }
}

fn collect_refs(e: &Expr, out: &mut Vec<(String, String)>) {
    match e {
        Expr::Or(a, b) | Expr::And(a, b) | Expr::Cmp(_, a, b) => {
            collect_refs(a, out);
            collect_refs(b, out);
        }
        Expr::Not(a) => collect_refs(a, out),
        Expr::Ref { id, path } => out.push((id.clone(), path.clone())),
        Expr::Lit(_) => {}
    }
}

/// JavaScript truthiness (`None` is `undefined`).
pub fn truthy(v: Option<&Item>) -> bool {
    match v {
        None | Some(Item::Null) => false,
        Some(Item::Bool(b)) => *b,
        Some(Item::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Item::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

fn eval(e: &Expr, scope: &dyn Scope) -> Result<Option<Item>> {
    Ok(match e {
        Expr::Lit(v) => Some(v.clone()),
        Expr::Ref { id, path } => {
            let r = scope
                .result(id)
                .ok_or_else(|| Error::runtime(format!("Unknown step reference: {id}.{path}")))?;
            get_path(r, path).cloned()
        }
        Expr::Not(a) => Some(Item::Bool(!truthy(eval(a, scope)?.as_ref()))),
        Expr::And(a, b) => {
            let (x, y) = (eval(a, scope)?, eval(b, scope)?);
            if truthy(x.as_ref()) {
                y
            } else {
                x
            }
        }
        Expr::Or(a, b) => {
            let (x, y) = (eval(a, scope)?, eval(b, scope)?);
            if truthy(x.as_ref()) {
                x
            } else {
                y
            }
        }
        Expr::Cmp(op, a, b) => {
            let (x, y) = (eval(a, scope)?, eval(b, scope)?);
            Some(Item::Bool(compare(*op, x.as_ref(), y.as_ref())))
        }
    })
}

fn strict_eq(a: Option<&Item>, b: Option<&Item>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Item::Number(x)), Some(Item::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn numeric(v: Option<&Item>) -> Option<f64> {
    match v? {
        Item::Number(n) => n.as_f64(),
        Item::String(s) if !s.trim().is_empty() => {
            Some(string_to_number(s)).filter(|f| !f.is_nan())
        }
        _ => None,
    }
}

fn compare(op: CmpOp, a: Option<&Item>, b: Option<&Item>) -> bool {
    match op {
        CmpOp::Eq => strict_eq(a, b),
        CmpOp::Ne => !strict_eq(a, b),
        _ => match (numeric(a), numeric(b)) {
            (Some(x), Some(y)) => match op {
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                _ => x >= y,
            },
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::template::MapScope;
    use super::*;
    use serde_json::{json, Map};

    fn check(expr: &str, results: Item) -> Result<bool> {
        let args = Map::new();
        let results = results.as_object().unwrap().clone();
        let scope = MapScope {
            args: &args,
            results: &results,
            extra: None,
        };
        Condition::from_value(&json!(expr))?.eval(&scope)
    }

    #[test]
    fn strict_semantics() {
        let r = json!({"a": {"id":"a","json":{"n":10,"s":"10","status":"ok","o":{"x":1,"y":2}},"approved":true}});
        assert!(check("$a.json.n == 10", r.clone()).unwrap());
        assert!(!check("$a.json.s == 10", r.clone()).unwrap());
        assert!(check("$a.json.s > 9", r.clone()).unwrap());
        assert!(check("$a.json.status == ok", r.clone()).unwrap());
        assert!(check("$a.json.status != 'no'", r.clone()).unwrap());
        assert!(check("$a.approved && !$a.skipped", r.clone()).unwrap());
        assert!(check("($a.json.n >= 11) || $a.json.n < 11.5", r.clone()).unwrap());
        assert!(!check("$a.json.missing > -1", r.clone()).unwrap());
        assert!(!check("true > 0", r.clone()).unwrap());
        assert!(check("$a.json.o == $a.json.o", r.clone()).unwrap());
        assert!(check(" true ", r.clone()).unwrap());
        assert!(!check("false", r.clone()).unwrap());
    }

    #[test]
    fn errors() {
        let r = json!({"a": {"id":"a"}});
        for bad in [
            "ok == $a.json",
            "$a.json ==",
            "($a.json",
            "$a.json @ 1",
            "1 == 1 == 1",
            "'x",
        ] {
            assert_eq!(
                check(bad, r.clone()).unwrap_err().to_string(),
                format!("Unsupported condition: {bad}"),
                "{bad}"
            );
        }
        assert_eq!(
            check("!$zz.json", r.clone()).unwrap_err().to_string(),
            "Unknown step reference: zz.json"
        );
        assert_eq!(
            Condition::from_value(&json!(3)).unwrap_err().to_string(),
            "Unsupported condition type"
        );
    }
}
