//! What retrievers, indexers, rerankers and evaluators share: typed options
//! (their schema, listed as `customOptions`, and their checked decoding), and
//! finding and calling an action by name.

use genkit_core::schema::{SchemaValidator, accepts_anything, schema_for};
use genkit_core::{
    Action, ActionKey, ActionKind, DynAction, Error, Payload, Registry, Result, RunOptions,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;
use std::sync::Arc;

/// The options type `O` of an action: its JSON schema (`None` when it
/// accepts anything, as `serde_json::Value` does) and a validator for it.
pub struct TypedOptions<O> {
    schema: Option<Value>,
    validator: Option<Arc<SchemaValidator>>,
    _o: PhantomData<fn() -> O>,
}

impl<O> Clone for TypedOptions<O> {
    fn clone(&self) -> Self {
        Self {
            schema: self.schema.clone(),
            validator: self.validator.clone(),
            _o: PhantomData,
        }
    }
}

impl<O: DeserializeOwned + JsonSchema> Default for TypedOptions<O> {
    fn default() -> Self {
        Self::new()
    }
}

impl<O: DeserializeOwned + JsonSchema> TypedOptions<O> {
    /// Derives the schema of `O`.
    pub fn new() -> Self {
        let schema = schema_for::<O>();
        if accepts_anything(&schema) {
            return Self {
                schema: None,
                validator: None,
                _o: PhantomData,
            };
        }
        // A derived schema always compiles; if one ever did not, typed
        // deserialization still checks the options.
        let validator = SchemaValidator::compile(&schema).ok().map(Arc::new);
        Self {
            schema: Some(schema),
            validator,
            _o: PhantomData,
        }
    }

    /// The schema, when `O` constrains anything.
    pub fn schema(&self) -> Option<&Value> {
        self.schema.as_ref()
    }

    /// Checks and decodes the options of a request to `what`
    /// (`INVALID_ARGUMENT` naming the failing field). Absent or `null`
    /// options are `None`.
    pub fn decode(&self, options: Option<Value>, what: &str) -> Result<Option<O>> {
        let Some(value) = options.filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        if let Some(v) = &self.validator {
            v.validate(&value).map_err(|e| {
                Error::invalid_argument(format!("options of {what}: {}", e.message()))
            })?;
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| Error::invalid_argument(format!("options of {what}: {e}")).with_source(e))
    }
}

/// `schema` (an action's wire request schema) with its `options` property
/// replaced by the options schema, as Genkit JS extends its request schemas.
pub fn with_options_schema(mut schema: Value, options: Option<&Value>) -> Value {
    if let (Some(options), Some(props)) = (
        options,
        schema.get_mut("properties").and_then(Value::as_object_mut),
    ) {
        let mut options = options.clone();
        if let Some(m) = options.as_object_mut() {
            m.remove("$schema");
        }
        props.insert("options".into(), options);
    }
    schema
}

/// `{"customOptions": schema}` or `{}`: the kind-named metadata entry.
pub fn custom_options_metadata(schema: Option<&Value>) -> Value {
    let mut m = serde_json::Map::new();
    if let Some(s) = schema {
        m.insert("customOptions".into(), s.clone());
    }
    Value::Object(m)
}

/// Serializes caller options (a failure is the caller's: `INVALID_ARGUMENT`).
pub fn options_to_value<T: Serialize>(options: &T) -> Result<Value> {
    serde_json::to_value(options).map_err(|e| {
        Error::invalid_argument(format!("options do not serialize to JSON: {e}")).with_source(e)
    })
}

/// The action `name` of `kind` (`name` may be a full key `/kind/name`).
pub async fn resolve(registry: &Registry, kind: ActionKind, name: &str) -> Result<DynAction> {
    let key = if name.starts_with('/') {
        name.to_owned()
    } else {
        ActionKey::format(kind, name)
    };
    registry
        .lookup_action(&key)
        .await?
        .ok_or_else(|| Error::not_found(format!("Unable to resolve the {kind} {name}")))
}

/// Runs `action` with `input`: typed when it is an `Action<I, O>` (no JSON
/// at all), else through JSON.
pub async fn call<I: Payload, O: Payload>(action: &DynAction, input: I) -> Result<O> {
    if let Some(typed) = Action::<I, O>::downcast(action) {
        return typed.run(input).await;
    }
    let out = action
        .run_json(serde_json::to_value(&input)?, RunOptions::default())
        .await?;
    serde_json::from_value(out.output).map_err(|e| {
        Error::internal(format!(
            "{} returned an invalid response: {e}",
            action.key()
        ))
        .with_source(e)
    })
}
