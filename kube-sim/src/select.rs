//! Label and field selectors: Kubernetes' selector grammar and the field selectors each kind supports.

use serde_json::Value;

use crate::error::ApiError;

/// One label requirement.
#[derive(Debug, Clone, PartialEq)]
pub enum LabelRequirement {
    /// `k`
    Exists(String),
    /// `!k`
    NotExists(String),
    /// `k=v`, `k==v`
    Equal(String, String),
    /// `k!=v` (also matches objects without `k`)
    NotEqual(String, String),
    /// `k in (a,b)`
    In(String, Vec<String>),
    /// `k notin (a,b)` (also matches objects without `k`)
    NotIn(String, Vec<String>),
    /// `k>N`
    Greater(String, i64),
    /// `k<N`
    Less(String, i64),
}

/// A parsed label selector: all requirements ANDed; empty matches everything.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelSelector(pub Vec<LabelRequirement>);

fn bad_selector(s: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {why} (selector {s:?})"))
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Result<Vec<&str>, ApiError> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(bad_selector(s, "unbalanced parenthesis"));
                }
            }
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad_selector(s, "found '', expected: ')'"));
    }
    parts.push(&s[start..]);
    Ok(parts)
}

fn parse_set(whole: &str, rest: &str) -> Result<Vec<String>, ApiError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad_selector(whole, "expected a parenthesised set"))?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(|v| !valid_value(v)) {
        return Err(bad_selector(whole, "invalid label value"));
    }
    Ok(values)
}

impl LabelSelector {
    /// Parses the Kubernetes label selector grammar.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self(reqs));
        }
        for part in split_top_level(s)? {
            let p = part.trim();
            if p.is_empty() {
                return Err(bad_selector(s, "empty requirement"));
            }
            reqs.push(Self::parse_requirement(s, p)?);
        }
        Ok(Self(reqs))
    }

    fn parse_requirement(whole: &str, p: &str) -> Result<LabelRequirement, ApiError> {
        if let Some(k) = p.strip_prefix('!') {
            let k = k.trim();
            return if valid_key(k) {
                Ok(LabelRequirement::NotExists(k.into()))
            } else {
                Err(bad_selector(whole, "invalid key"))
            };
        }
        for (op, ctor) in [("!=", 0u8), ("==", 1), ("=", 1), (">", 2), ("<", 3)] {
            if let Some((k, v)) = p.split_once(op) {
                let (k, v) = (k.trim(), v.trim());
                if !valid_key(k) || !valid_value(v) {
                    return Err(bad_selector(whole, "invalid key or value"));
                }
                return Ok(match ctor {
                    0 => LabelRequirement::NotEqual(k.into(), v.into()),
                    1 => LabelRequirement::Equal(k.into(), v.into()),
                    _ => {
                        let n: i64 = v.parse().map_err(|_| bad_selector(whole, "expected an integer"))?;
                        if ctor == 2 {
                            LabelRequirement::Greater(k.into(), n)
                        } else {
                            LabelRequirement::Less(k.into(), n)
                        }
                    }
                });
            }
        }
        let mut words = p.splitn(2, char::is_whitespace);
        let key = words.next().unwrap_or_default().trim();
        let rest = words.next().unwrap_or_default().trim();
        if rest.is_empty() {
            return if valid_key(key) {
                Ok(LabelRequirement::Exists(key.into()))
            } else {
                Err(bad_selector(whole, "invalid key"))
            };
        }
        if !valid_key(key) {
            return Err(bad_selector(whole, "invalid key"));
        }
        if let Some(r) = rest.strip_prefix("notin") {
            return Ok(LabelRequirement::NotIn(key.into(), parse_set(whole, r)?));
        }
        if let Some(r) = rest.strip_prefix("in") {
            return Ok(LabelRequirement::In(key.into(), parse_set(whole, r)?));
        }
        Err(bad_selector(whole, "unknown operator"))
    }

    /// True when the selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an object (its `metadata.labels`) matches.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = &obj["metadata"]["labels"];
        self.matches_with(|k| labels.get(k).and_then(Value::as_str))
    }

    /// Whether labels read through `get` (a key's value, if set) match.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            LabelRequirement::Exists(k) => get(k).is_some(),
            LabelRequirement::NotExists(k) => get(k).is_none(),
            LabelRequirement::Equal(k, v) => get(k) == Some(v.as_str()),
            LabelRequirement::NotEqual(k, v) => get(k) != Some(v.as_str()),
            LabelRequirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            LabelRequirement::Greater(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x > *n),
            LabelRequirement::Less(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x < *n),
        })
    }
}

/// A parsed field selector: `(JSON path, equals?, value)` terms ANDed (a path may list alternatives, see
/// `EVENT_FIELD_PATHS`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSelector(pub Vec<(String, bool, String)>);

/// Field paths every kind supports.
const COMMON_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];
/// Extra Pod field paths.
const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.restartPolicy",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];

/// Extra core v1 Event field labels besides `involvedObject.*` (upstream's Event field label conversion).
const EVENT_FIELDS: &[&str] = &["reason", "type", "reportingComponent", "source"];
/// Event field labels that are not their JSON path: (label, paths). Alternatives are separated by
/// [`PATH_ALTERNATIVES`], the first non-empty one counts: an Event's `source` is `source.component`, else its
/// reporting controller (upstream's selectable fields).
const EVENT_FIELD_PATHS: &[(&str, &str)] = &[("source", "source.component|reportingComponent")];
/// Separator of alternative JSON paths of one field label.
const PATH_ALTERNATIVES: char = '|';

fn unescape_split(s: &str, sep: char) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next()
                && let Some(last) = out.last_mut()
            {
                last.push('\\');
                last.push(n);
            }
        } else if c == sep {
            out.push(String::new());
        } else if let Some(last) = out.last_mut() {
            last.push(c);
        }
    }
    out
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl FieldSelector {
    /// Parses a field selector, rejecting fields the resource does not support (400).
    pub fn parse(s: &str, kind: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self(terms));
        }
        for part in unescape_split(s, ',') {
            let (k, eq, v) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!("invalid field selector: {s:?}")));
            };
            let k = k.trim();
            let supported = COMMON_FIELDS.contains(&k)
                || (kind == "Pod" && POD_FIELDS.contains(&k))
                || (kind == "Job" && k == "status.successful")
                || (kind == "Event" && (k.starts_with("involvedObject.") || EVENT_FIELDS.contains(&k)))
                || (kind == "Secret" && k == "type");
            if !supported {
                return Err(ApiError::bad_request(format!("field label not supported: {k}")));
            }
            let path = match EVENT_FIELD_PATHS
                .iter()
                .find(|(label, _)| kind == "Event" && *label == k)
            {
                Some((_, path)) => path,
                None => k,
            };
            terms.push((path.to_string(), eq, unescape(v.trim())));
        }
        Ok(Self(terms))
    }

    /// True when there are no terms.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `metadata.name=X` when the selector pins a single name (used to avoid list scans).
    pub fn pinned_name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, eq, _)| *eq && k == "metadata.name")
            .map(|(_, _, v)| v.as_str())
    }

    /// Whether an object with this name and namespace matches, when every term reads only `metadata.name` or
    /// `metadata.namespace`; `None` when a term reads another field.
    pub fn matches_metadata(&self, name: &str, namespace: Option<&str>) -> Option<bool> {
        let mut all = true;
        for (path, eq, want) in &self.0 {
            let actual = match path.as_str() {
                "metadata.name" => name,
                "metadata.namespace" => namespace.unwrap_or_default(),
                _ => return None,
            };
            all &= (actual == want) == *eq;
        }
        Some(all)
    }

    /// Whether an object matches every term.
    pub fn matches(&self, obj: &Value) -> bool {
        let lookup = |path: &str| {
            let mut cur = obj;
            for seg in path.split('.') {
                cur = &cur[seg];
            }
            match cur {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            }
        };
        self.0.iter().all(|(paths, eq, want)| {
            let actual = paths
                .split(PATH_ALTERNATIVES)
                .map(lookup)
                .find(|v| !v.is_empty())
                .unwrap_or_default();
            (actual == *want) == *eq
        })
    }
}
