//! JSON values to Firestore values and back, the way the Node.js Firestore
//! client (which Genkit JS uses) encodes them, so documents match byte for
//! byte in meaning: safe integers are `integerValue`, other numbers
//! `doubleValue`, objects `mapValue`, arrays `arrayValue`.

use std::collections::HashMap;

use genkit_core::{Error, Result, StatusCode};
use serde_json::{Map, Number, Value as Json};

use crate::proto::{ArrayValue, MapValue, Value, value::Kind};

/// JavaScript's `Number.MAX_SAFE_INTEGER`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// A JSON value as a Firestore value.
pub(crate) fn to_firestore(json: &Json) -> Value {
    let kind = match json {
        Json::Null => Kind::NullValue(0),
        Json::Bool(b) => Kind::BooleanValue(*b),
        Json::Number(n) => number(n),
        Json::String(s) => Kind::StringValue(s.clone()),
        Json::Array(items) => Kind::ArrayValue(ArrayValue {
            values: items.iter().map(to_firestore).collect(),
        }),
        Json::Object(map) => Kind::MapValue(MapValue {
            fields: to_fields(map),
        }),
    };
    Value { kind: Some(kind) }
}

/// A JSON object as a document's (or map's) fields.
pub(crate) fn to_fields(map: &Map<String, Json>) -> HashMap<String, Value> {
    map.iter()
        .map(|(k, v)| (k.clone(), to_firestore(v)))
        .collect()
}

/// Node's client writes `Number.isSafeInteger(n)` numbers as integers and
/// every other number (fractions, `-0`, beyond 2^53) as a double.
fn number(n: &Number) -> Kind {
    if let Some(i) = n.as_i64()
        && (i.unsigned_abs() as f64) <= MAX_SAFE_INTEGER
    {
        return Kind::IntegerValue(i);
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    let safe = f.is_finite()
        && f.fract() == 0.0
        && f.abs() <= MAX_SAFE_INTEGER
        && !(f == 0.0 && f.is_sign_negative());
    if safe {
        // In range, so the cast is exact.
        Kind::IntegerValue(f as i64)
    } else {
        Kind::DoubleValue(f)
    }
}

/// A Firestore value as JSON. Bytes, timestamps, references and geo points
/// never occur in a session document's JSON parts: they are a corrupt
/// document (`DATA_LOSS`).
pub(crate) fn to_json(value: &Value) -> Result<Json> {
    Ok(match &value.kind {
        None | Some(Kind::NullValue(_)) => Json::Null,
        Some(Kind::BooleanValue(b)) => Json::Bool(*b),
        Some(Kind::IntegerValue(i)) => Json::from(*i),
        Some(Kind::DoubleValue(f)) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Some(Kind::StringValue(s)) => Json::String(s.clone()),
        Some(Kind::ArrayValue(a)) => {
            Json::Array(a.values.iter().map(to_json).collect::<Result<_>>()?)
        }
        Some(Kind::MapValue(m)) => Json::Object(from_fields(&m.fields)?),
        Some(other) => {
            return Err(Error::new(
                StatusCode::DataLoss,
                format!("a session document holds a non-JSON Firestore value: {other:?}"),
            ));
        }
    })
}

/// A document's (or map's) fields as a JSON object, keys sorted (Firestore
/// maps are unordered).
pub(crate) fn from_fields(fields: &HashMap<String, Value>) -> Result<Map<String, Json>> {
    let mut keys: Vec<&String> = fields.keys().collect();
    keys.sort();
    keys.into_iter()
        .map(|k| Ok((k.clone(), to_json(&fields[k])?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_follow_the_node_client() {
        let kind = |j: Json| to_firestore(&j).kind;
        assert_eq!(kind(json!(3)), Some(Kind::IntegerValue(3)));
        assert_eq!(kind(json!(2.0)), Some(Kind::IntegerValue(2)));
        assert_eq!(kind(json!(2.5)), Some(Kind::DoubleValue(2.5)));
        assert_eq!(kind(json!(-0.0)), Some(Kind::DoubleValue(-0.0)));
        assert_eq!(
            kind(json!(9_007_199_254_740_993u64)),
            Some(Kind::DoubleValue(9_007_199_254_740_992.0))
        );
    }

    #[test]
    fn json_round_trips() {
        let doc = json!({"a": [1, "x", null, {"b": true}], "c": {"d": 1.5}, "e": ""});
        assert_eq!(to_json(&to_firestore(&doc)).ok(), Some(doc));
    }

    #[test]
    fn bytes_are_not_json() {
        let v = Value {
            kind: Some(Kind::BytesValue(vec![1])),
        };
        assert_eq!(
            to_json(&v).map_err(|e| e.status()),
            Err(StatusCode::DataLoss)
        );
    }
}
