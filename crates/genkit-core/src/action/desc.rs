//! What an action says about itself: kind, name, schemas, metadata.

use super::kind::{ActionKey, ActionKind};
use serde_json::{Map, Value};

/// An action's self-description, as listed by the registry and the Reflection API.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionDesc {
    /// The kind.
    pub kind: ActionKind,
    /// The name (plugin actions include the plugin: `openai/gpt-4o`).
    pub name: String,
    /// What it does; shown to models for tools.
    pub description: Option<String>,
    /// JSON schema of the input (`None` accepts anything).
    pub input_schema: Option<Value>,
    /// JSON schema of the output.
    pub output_schema: Option<Value>,
    /// JSON schema of stream chunks.
    pub stream_schema: Option<Value>,
    /// JSON schema of the init payload of a bidirectional action
    /// ([`BidiAction`](super::BidiAction)); not part of the Reflection listing.
    pub init_schema: Option<Value>,
    /// Free-form metadata (`{"model": {...}}` for models).
    pub metadata: Map<String, Value>,
}

impl ActionDesc {
    /// A description with no schema and no metadata.
    pub fn new(kind: ActionKind, name: impl Into<String>) -> Self {
        Self {
            kind,
            name: name.into(),
            description: None,
            input_schema: None,
            output_schema: None,
            stream_schema: None,
            init_schema: None,
            metadata: Map::new(),
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the input schema.
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the stream chunk schema.
    pub fn with_stream_schema(mut self, schema: Value) -> Self {
        self.stream_schema = Some(schema);
        self
    }

    /// Sets the init schema (bidirectional actions).
    pub fn with_init_schema(mut self, schema: Value) -> Self {
        self.init_schema = Some(schema);
        self
    }

    /// Sets one metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// The registry key, `/kind/name`.
    pub fn key(&self) -> String {
        ActionKey::format(self.kind, &self.name)
    }

    /// The descriptor JSON of the Reflection API's `/api/actions`: `key`,
    /// `name`, and `description`, `inputSchema`, `outputSchema`, `metadata`
    /// when they have a value (as Genkit JS lists actions; the stream schema
    /// is not part of the listing).
    pub fn to_descriptor(&self) -> Value {
        let mut m = Map::new();
        m.insert("key".into(), Value::from(self.key()));
        m.insert("name".into(), Value::from(self.name.clone()));
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::from(d.clone()));
        }
        if let Some(s) = &self.input_schema {
            m.insert("inputSchema".into(), s.clone());
        }
        if let Some(s) = &self.output_schema {
            m.insert("outputSchema".into(), s.clone());
        }
        let mut metadata = self.metadata.clone();
        metadata
            .entry("type")
            .or_insert_with(|| Value::from(self.kind.as_str()));
        m.insert("metadata".into(), Value::Object(metadata));
        Value::Object(m)
    }
}
