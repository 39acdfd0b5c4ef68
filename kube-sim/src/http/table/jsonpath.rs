//! The JSONPath subset kube-apiserver evaluates for a CRD's `additionalPrinterColumns` (client-go's
//! `util/jsonpath` with missing keys allowed): `.field`, `['field']`, `..field`, `*`, `[n]`, `[-n]`,
//! `[start:end]` and filters such as `[?(@.type=="Ready")]`.

use serde_json::Value;

/// A parsed JSONPath.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Recursive(String),
    Wildcard,
    Index(i64),
    Slice(Option<i64>, Option<i64>),
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: JsonPath,
    op: Option<(Op, Literal)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Str(String),
    Num(f64),
    Bool(bool),
}

/// Why a JSONPath could not be parsed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unrecognized column definition {0:?}")]
pub struct ParseError(pub String);

impl JsonPath {
    /// Parses a column's `jsonPath` (with or without the surrounding `{}`).
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let err = || ParseError(text.to_string());
        let trimmed = text.trim();
        let inner = trimmed
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(trimmed);
        let inner = inner.strip_prefix('$').unwrap_or(inner);
        let chars: Vec<char> = inner.chars().collect();
        let mut p = Parser { chars: &chars, pos: 0 };
        let steps = p.steps().ok_or_else(err)?;
        if p.pos != chars.len() {
            return Err(err());
        }
        Ok(Self { steps })
    }

    /// Every value the path selects in `root`, in document order; empty when a key is missing.
    pub fn find<'a>(&self, root: &'a Value) -> Result<Vec<&'a Value>, EvalError> {
        let mut current = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in current {
                step.apply(v, &mut next)?;
            }
            current = next;
        }
        Ok(current)
    }
}

/// A filter compared values of incompatible types (`template.equal` fails, and so does the cell).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("incompatible types for comparison")]
pub struct EvalError;

impl Step {
    fn apply<'a>(&self, v: &'a Value, out: &mut Vec<&'a Value>) -> Result<(), EvalError> {
        match self {
            Step::Field(name) => {
                if let Some(x) = v.as_object().and_then(|m| m.get(name)) {
                    out.push(x);
                }
            }
            Step::Recursive(name) => recurse(v, name, out),
            Step::Wildcard => match v {
                Value::Array(a) => out.extend(a.iter()),
                Value::Object(m) => out.extend(m.values()),
                _ => {}
            },
            Step::Index(i) => {
                if let Some(a) = v.as_array() {
                    let len = a.len() as i64;
                    let idx = if *i < 0 { len + i } else { *i };
                    if (0..len).contains(&idx)
                        && let Some(x) = a.get(idx as usize)
                    {
                        out.push(x);
                    }
                }
            }
            Step::Slice(start, end) => {
                if let Some(a) = v.as_array() {
                    let len = a.len() as i64;
                    let clamp = |i: i64| if i < 0 { (len + i).max(0) } else { i.min(len) };
                    let s = clamp(start.unwrap_or(0));
                    let e = clamp(end.unwrap_or(len));
                    if s < e {
                        out.extend(a[s as usize..e as usize].iter());
                    }
                }
            }
            Step::Filter(f) => {
                if let Some(a) = v.as_array() {
                    for item in a {
                        if f.matches(item)? {
                            out.push(item);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn recurse<'a>(v: &'a Value, name: &str, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(m) => {
            if let Some(x) = m.get(name) {
                out.push(x);
            }
            for child in m.values() {
                recurse(child, name, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|c| recurse(c, name, out)),
        _ => {}
    }
}

impl Filter {
    fn matches(&self, item: &Value) -> Result<bool, EvalError> {
        let lefts = self.left.find(item)?;
        let Some(left) = lefts.first() else {
            return Ok(false);
        };
        if lefts.len() > 1 {
            return Err(EvalError);
        }
        let Some((op, right)) = &self.op else {
            return Ok(true);
        };
        let ord = match (left, right) {
            (Value::String(a), Literal::Str(b)) => a.as_str().cmp(b.as_str()),
            (Value::Number(a), Literal::Num(b)) => a.as_f64().and_then(|a| a.partial_cmp(b)).ok_or(EvalError)?,
            (Value::Bool(a), Literal::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => a.cmp(b),
            _ => return Err(EvalError),
        };
        Ok(match op {
            Op::Eq => ord.is_eq(),
            Op::Ne => ord.is_ne(),
            Op::Lt => ord.is_lt(),
            Op::Gt => ord.is_gt(),
            Op::Le => ord.is_le(),
            Op::Ge => ord.is_ge(),
        })
    }
}

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(' ') {
            self.pos += 1;
        }
    }

    /// Steps until the end of input or a character that cannot continue a path (`)`, an operator).
    fn steps(&mut self) -> Option<Vec<Step>> {
        let mut steps = Vec::new();
        loop {
            match self.peek() {
                Some('.') => {
                    self.pos += 1;
                    if self.eat('.') {
                        steps.push(Step::Recursive(self.field()?));
                    } else if self.eat('*') {
                        steps.push(Step::Wildcard);
                    } else if matches!(self.peek(), None | Some('.' | '[')) {
                        // A bare `.` (the whole object) selects the current value.
                    } else {
                        steps.push(Step::Field(self.field()?));
                    }
                }
                Some('[') => {
                    self.pos += 1;
                    steps.push(self.bracket()?);
                    if !self.eat(']') {
                        return None;
                    }
                }
                _ => return Some(steps),
            }
        }
    }

    fn field(&mut self) -> Option<String> {
        let mut name = String::new();
        while let Some(c) = self.peek() {
            match c {
                '\\' if self.chars.get(self.pos + 1) == Some(&'.') => {
                    name.push('.');
                    self.pos += 2;
                }
                '.' | '[' | ']' | '(' | ')' | '{' | '}' | ' ' | '=' | '!' | '<' | '>' | '\'' | '"' | ',' => break,
                _ => {
                    name.push(c);
                    self.pos += 1;
                }
            }
        }
        (!name.is_empty()).then_some(name)
    }

    fn bracket(&mut self) -> Option<Step> {
        self.skip_spaces();
        match self.peek()? {
            '*' => {
                self.pos += 1;
                Some(Step::Wildcard)
            }
            '\'' | '"' => {
                let s = self.quoted()?;
                Some(Step::Field(s))
            }
            '?' => {
                self.pos += 1;
                if !self.eat('(') {
                    return None;
                }
                let f = self.filter()?;
                if !self.eat(')') {
                    return None;
                }
                Some(Step::Filter(f))
            }
            _ => {
                let start = self.int();
                if self.eat(':') {
                    let end = self.int();
                    Some(Step::Slice(start, end))
                } else {
                    start.map(Step::Index)
                }
            }
        }
    }

    fn int(&mut self) -> Option<i64> {
        let begin = self.pos;
        if self.peek() == Some('-') {
            self.pos += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text: String = self.chars[begin..self.pos].iter().collect();
        text.parse().ok()
    }

    fn quoted(&mut self) -> Option<String> {
        let quote = self.peek()?;
        self.pos += 1;
        let mut s = String::new();
        loop {
            let c = self.peek()?;
            self.pos += 1;
            if c == quote {
                return Some(s);
            }
            if c == '\\'
                && let Some(n) = self.peek()
            {
                self.pos += 1;
                s.push(n);
                continue;
            }
            s.push(c);
        }
    }

    fn filter(&mut self) -> Option<Filter> {
        self.skip_spaces();
        if !self.eat('@') {
            return None;
        }
        let left = JsonPath { steps: self.steps()? };
        self.skip_spaces();
        let op = match (self.peek(), self.chars.get(self.pos + 1)) {
            (Some('='), Some('=')) => Some((Op::Eq, 2)),
            (Some('!'), Some('=')) => Some((Op::Ne, 2)),
            (Some('<'), Some('=')) => Some((Op::Le, 2)),
            (Some('>'), Some('=')) => Some((Op::Ge, 2)),
            (Some('<'), _) => Some((Op::Lt, 1)),
            (Some('>'), _) => Some((Op::Gt, 1)),
            _ => None,
        };
        let Some((op, width)) = op else {
            return Some(Filter { left, op: None });
        };
        self.pos += width;
        self.skip_spaces();
        let literal = match self.peek()? {
            '\'' | '"' => Literal::Str(self.quoted()?),
            _ => {
                let begin = self.pos;
                while self.peek().is_some_and(|c| c != ')' && c != ' ') {
                    self.pos += 1;
                }
                let text: String = self.chars[begin..self.pos].iter().collect();
                match text.as_str() {
                    "true" => Literal::Bool(true),
                    "false" => Literal::Bool(false),
                    _ => Literal::Num(text.parse().ok()?),
                }
            }
        };
        self.skip_spaces();
        Some(Filter {
            left,
            op: Some((op, literal)),
        })
    }
}

/// How client-go's `JSONPath.PrintResults` prints one value: strings raw, maps and lists as compact JSON,
/// numbers and booleans as Go's `fmt.Print` does, JSON null as `<no value>`.
pub fn print_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<no value>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (_, Some(u)) => u.to_string(),
            _ => go_float(n.as_f64().unwrap_or_default()),
        },
        Value::Array(_) | Value::Object(_) => serde_json::to_string(v).unwrap_or_default(),
    }
}

/// Go's `%v` for a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`: shortest digits, exponent form from
/// 1e+06 and below 1e-04).
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let exp = f.abs().log10().floor() as i32;
    if (-4..6).contains(&exp) {
        format!("{f}")
    } else {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, e)) => {
                let e: i32 = e.parse().unwrap_or_default();
                format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
            }
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn find(path: &str, doc: &Value) -> Vec<Value> {
        JsonPath::parse(path)
            .unwrap()
            .find(doc)
            .unwrap()
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn fields_indices_and_missing_keys() {
        let doc = json!({"status": {"state": "ready", "head": {"podIP": "10.0.0.1"}, "list": [1, 2, 3]}});
        assert_eq!(find(".status.state", &doc), [json!("ready")]);
        assert_eq!(find("{.status.head.podIP}", &doc), [json!("10.0.0.1")]);
        assert_eq!(find(".status['head'].podIP", &doc), [json!("10.0.0.1")]);
        assert!(find(".status.missing.deeper", &doc).is_empty());
        assert_eq!(find(".status.list[0]", &doc), [json!(1)]);
        assert_eq!(find(".status.list[-1]", &doc), [json!(3)]);
        assert_eq!(find(".status.list[1:]", &doc), [json!(2), json!(3)]);
        assert_eq!(find(".status.list[*]", &doc).len(), 3);
        assert_eq!(find("..podIP", &doc), [json!("10.0.0.1")]);
        assert!(find(".status.list[7]", &doc).is_empty());
    }

    #[test]
    fn filters_select_matching_items() {
        let doc = json!({"status": {"conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "False", "n": 3},
        ]}});
        assert_eq!(
            find(r#".status.conditions[?(@.type=="Ready")].status"#, &doc),
            [json!("False")]
        );
        assert_eq!(
            find(".status.conditions[?(@.type == 'Ready')].status", &doc),
            [json!("False")]
        );
        assert_eq!(find(".status.conditions[?(@.n > 2)].type", &doc), [json!("Ready")]);
        assert_eq!(find(".status.conditions[?(@.n)].type", &doc), [json!("Ready")]);
        assert_eq!(
            find(r#".status.conditions[?(@.type!="Ready")].type"#, &doc),
            [json!("Initialized")]
        );
        let err = JsonPath::parse(".status.conditions[?(@.n == 'x')]").unwrap().find(&doc);
        assert_eq!(err, Err(EvalError));
    }

    #[test]
    fn malformed_paths_are_rejected() {
        for bad in [".status[", ".status[?(@.a==)]", ".a]b", "[abc]"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_print_as_client_go_prints_them() {
        assert_eq!(print_value(&json!("x")), "x");
        assert_eq!(print_value(&json!(3)), "3");
        assert_eq!(print_value(&json!(1.5)), "1.5");
        assert_eq!(print_value(&json!(1e21)), "1e+21");
        assert_eq!(print_value(&json!(1e6)), "1e+06");
        assert_eq!(print_value(&json!(123456.0)), "123456");
        assert_eq!(print_value(&json!(0.00001)), "1e-05");
        assert_eq!(print_value(&json!(true)), "true");
        assert_eq!(print_value(&Value::Null), "<no value>");
        assert_eq!(print_value(&json!({"a": [1]})), r#"{"a":[1]}"#);
    }
}
