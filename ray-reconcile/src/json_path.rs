//! Which field of a JSON text a decoding error is about, from the error's position alone.
//!
//! serde_json reports where in the text it was when a value did not fit its type. Turning that position
//! back into a field path (`spec.workerGroupSpecs[0].replicas`) takes one scan of the text, with no typed
//! decoding: the alternative, decoding the object again through a path-tracking deserializer, compiles a
//! second deserializer for every field of every watched kind (a sixth of the operator's machine code, for a
//! path that only runs when an object does not read).

/// What kind of value failed, as far as the error message says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failed {
    /// A list (`invalid type: sequence, ...`).
    Array,
    /// A map (`invalid type: map, ...`).
    Object,
    /// Any value.
    Any,
}

/// The JSON path of the innermost value of kind `failed` in `text` whose span, both ends included, holds
/// byte `offset`: `a.b[2].c`, or `.` for the whole text (and for an `offset` no such value holds).
///
/// serde_json reports a value that does not fit its type where the value starts (a map where a string
/// belongs), just past its end (a string that is not a number, an unknown enum variant, an object that
/// lacks a required field) or, for a list or map read before it was refused, at its first element; the
/// kind tells that last case from a failure of the first element itself. The text is assumed to be valid
/// JSON (it has been read as JSON already); anything else yields the path reached so far.
pub fn json_path_at(text: &str, offset: usize, failed: Failed) -> String {
    let bytes = text.as_bytes();
    let mut scan = Scan {
        offset,
        failed,
        open: Vec::new(),
        best: None,
    };
    let mut pos = 0;
    while pos < bytes.len() {
        match bytes[pos] {
            b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' => pos += 1,
            b'{' | b'[' => {
                let array = bytes[pos] == b'[';
                let segment = scan.next_segment();
                scan.open.push(Open {
                    start: pos,
                    segment,
                    array,
                    key: None,
                    index: 0,
                });
                pos += 1;
            }
            b'}' | b']' => {
                pos += 1;
                if let Some(open) = scan.open.pop() {
                    let kind = if open.array { Failed::Array } else { Failed::Object };
                    scan.consider(open.start, pos, open.segment, kind);
                    scan.after_value();
                }
            }
            b'"' => {
                let end = string_end(bytes, pos);
                let in_object_key_position = scan.open.last().is_some_and(|o| !o.array && o.key.is_none());
                if in_object_key_position {
                    // A key: the value after the colon belongs to it.
                    let key = serde_json::from_str::<String>(&text[pos..end]).unwrap_or_default();
                    if let Some(open) = scan.open.last_mut() {
                        open.key = Some(key);
                    }
                } else {
                    let segment = scan.next_segment();
                    scan.consider(pos, end, segment, Failed::Any);
                    scan.after_value();
                }
                pos = end;
            }
            _ => {
                // A number, `true`, `false` or `null`.
                let end = bytes[pos..]
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                    .map_or(bytes.len(), |n| pos + n);
                let segment = scan.next_segment();
                scan.consider(pos, end, segment, Failed::Any);
                scan.after_value();
                pos = end.max(pos + 1);
            }
        }
    }
    match scan.best {
        Some((_, path)) if !path.is_empty() => path,
        _ => ".".to_owned(),
    }
}

/// One step of a path: an object's key or an array's index.
#[derive(Clone, Debug)]
enum Segment {
    Key(String),
    Index(usize),
}

/// An object or array whose closing bracket has not been reached yet.
struct Open {
    /// Where its opening bracket is.
    start: usize,
    /// Its own place in its parent (`None` for the whole text).
    segment: Option<Segment>,
    array: bool,
    /// In an object: the key whose value comes next (`None` while a key is expected).
    key: Option<String>,
    /// In an array: the index of the next element.
    index: usize,
}

struct Scan {
    offset: usize,
    failed: Failed,
    open: Vec<Open>,
    /// The deepest value found so far whose span holds `offset`: its depth and path.
    best: Option<(usize, String)>,
}

impl Scan {
    /// The place in the innermost open container of the value that starts next.
    fn next_segment(&self) -> Option<Segment> {
        let open = self.open.last()?;
        Some(if open.array {
            Segment::Index(open.index)
        } else {
            Segment::Key(open.key.clone().unwrap_or_default())
        })
    }

    /// Moves the innermost open container past the value just completed.
    fn after_value(&mut self) {
        if let Some(open) = self.open.last_mut() {
            if open.array {
                open.index += 1;
            } else {
                open.key = None;
            }
        }
    }

    /// Records the value of kind `kind` spanning `start..end` (its last byte at `end - 1`) when it is of
    /// the failed kind, holds the offset and is deeper than the best so far.
    fn consider(&mut self, start: usize, end: usize, segment: Option<Segment>, kind: Failed) {
        if start > self.offset || self.offset > end || (self.failed != Failed::Any && self.failed != kind) {
            return;
        }
        let depth = self.open.len() + usize::from(segment.is_some());
        if self.best.as_ref().is_some_and(|(best, _)| *best > depth) {
            return;
        }
        let mut path = String::new();
        let segments = self
            .open
            .iter()
            .filter_map(|o| o.segment.as_ref())
            .chain(segment.as_ref());
        for segment in segments {
            match segment {
                Segment::Key(key) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                }
                Segment::Index(index) => {
                    path.push('[');
                    path.push_str(&index.to_string());
                    path.push(']');
                }
            }
        }
        self.best = Some((depth, path));
    }
}

/// The index just past the string that starts with the quote at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut pos = start + 1;
    while pos < bytes.len() {
        match bytes[pos] {
            b'\\' => pos += 2,
            b'"' => return pos + 1,
            _ => pos += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, needle: &str, after: bool) -> String {
        let found = text.find(needle).unwrap();
        json_path_at(text, if after { found + needle.len() } else { found }, Failed::Any)
    }

    #[test]
    fn the_end_of_a_scalar_names_it() {
        let text = r#"{"spec":{"groups":[{"name":"a","replicas":"1Ei"}]}}"#;
        assert_eq!(at(text, r#""1Ei""#, true), "spec.groups[0].replicas");
        assert_eq!(at(text, r#""a""#, true), "spec.groups[0].name");
    }

    #[test]
    fn the_start_of_a_value_names_it() {
        let text = r#"{"a":1,"b":{"c":[true,{"d":null}]}}"#;
        assert_eq!(at(text, r#"{"c""#, false), "b");
        assert_eq!(at(text, r#"{"d""#, false), "b.c[1]");
        assert_eq!(at(text, "true", false), "b.c[0]");
        assert_eq!(at(text, "null", true), "b.c[1].d");
    }

    #[test]
    fn just_past_a_closing_brace_names_the_object() {
        let text = r#"{"spec":{"groups":[{"name":"a"},{"x":2}]}}"#;
        assert_eq!(at(text, r#"{"name":"a"}"#, true), "spec.groups[0]");
        assert_eq!(at(text, r#"{"x":2}]"#, true), "spec.groups");
        assert_eq!(json_path_at(text, text.len(), Failed::Any), ".");
    }

    #[test]
    fn a_refused_list_or_map_is_named_rather_than_its_first_element() {
        let text = r#"{"a":[[1],{"b":2}]}"#;
        let first = |needle: &str| text.find(needle).unwrap();
        assert_eq!(json_path_at(text, first("1"), Failed::Array), "a[0]");
        assert_eq!(json_path_at(text, first("[["), Failed::Array), "a");
        assert_eq!(json_path_at(text, first("1"), Failed::Any), "a[0][0]");
        assert_eq!(json_path_at(text, first(r#""b""#), Failed::Object), "a[1]");
        assert_eq!(json_path_at(text, first("2"), Failed::Object), "a[1]");
    }

    #[test]
    fn pretty_text_and_escaped_keys() {
        let text = "{\n  \"a\\\"b\": [\n    1,\n    \"x\\\"y\"\n  ]\n}";
        assert_eq!(at(text, "\"x\\\"y\"", true), "a\"b[1]");
        assert_eq!(at(text, "1", true), "a\"b[0]");
    }

    #[test]
    fn truncated_text_yields_the_path_reached() {
        assert_eq!(json_path_at(r#"{"a":{"b":"#, 10, Failed::Any), ".");
        assert_eq!(json_path_at("", 0, Failed::Any), ".");
    }
}
