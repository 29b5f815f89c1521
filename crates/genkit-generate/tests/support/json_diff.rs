//! Where two JSON values differ, as readable paths (shared by the tests
//! that compare with what Genkit JS recorded).

use serde_json::Value;

/// Where `got` differs from `expected` (JSON paths, at most a few).
pub fn differences(expected: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    if out.len() >= 8 {
        return;
    }
    match (expected, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => differences(v, w, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}: missing here (Genkit JS: {v})")),
                }
            }
            for (k, w) in b {
                if !a.contains_key(k) {
                    out.push(format!("{path}.{k}: only here ({w})"));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                differences(v, w, &format!("{path}[{i}]"), out);
            }
        }
        _ if expected != got => out.push(format!("{path}: Genkit JS {expected}, here {got}")),
        _ => {}
    }
}
