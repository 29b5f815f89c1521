//! [`Part`]: one piece of a message or document (text, media, a tool call, ...).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Metadata, is_truthy};

/// A piece of media referenced by URL (`data:`, `https:`, `gs:` ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Media {
    /// MIME type of the media; when absent it is inferred from a `data:` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// A `data:` or remote URL holding the media.
    pub url: String,
}

impl Media {
    /// Media at `url` with no declared content type.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            content_type: None,
            url: url.into(),
        }
    }

    /// Sets the MIME type.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }

    /// The declared content type, or the one embedded in a `data:` URL.
    pub fn effective_content_type(&self) -> Option<&str> {
        if let Some(ct) = self.content_type.as_deref() {
            return Some(ct);
        }
        let rest = self.url.strip_prefix("data:")?;
        let end = rest.find([';', ','])?;
        let ct = &rest[..end];
        (!ct.is_empty()).then_some(ct)
    }
}

/// Reads a present field as `Some`, `null` included: serde's default for
/// `Option<Value>` turns `null` into `None`, which would drop a tool's
/// `"input": null` or `"output": null` on the next write (Genkit JS keeps
/// them). A missing field is still `None` (`#[serde(default)]`).
fn null_is_a_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A model's request to call a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolRequest {
    /// Call id pairing this request with its [`ToolResponse`] (`ref` on the wire).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Call id pairing this request with its response.")]
    pub reference: Option<String>,
    /// Name of the tool to call.
    pub name: String,
    /// Input for the tool, usually an object. `Some(Value::Null)` is an
    /// explicit `"input": null`, kept as such; `None` is no input field.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "null_is_a_value"
    )]
    pub input: Option<Value>,
    /// True when this is an incomplete, streamed fragment of a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
}

impl ToolRequest {
    /// A request to call `name` with `input`.
    pub fn new(name: impl Into<String>, input: Value) -> Self {
        Self {
            reference: None,
            name: name.into(),
            input: Some(input),
            partial: None,
        }
    }

    /// Sets the call id (`ref`).
    pub fn with_ref(mut self, reference: impl Into<String>) -> Self {
        self.reference = Some(reference.into());
        self
    }
}

/// The result of running a tool, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResponse {
    /// Call id of the [`ToolRequest`] this answers (`ref` on the wire).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Call id of the tool request this answers.")]
    pub reference: Option<String>,
    /// Name of the tool that ran.
    pub name: String,
    /// Structured output of the tool. `Some(Value::Null)` is an explicit
    /// `"output": null` (a tool that returned nothing), kept as such.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "null_is_a_value"
    )]
    pub output: Option<Value>,
    /// Extra parts (media, text ...) for multipart tool responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Part>>,
}

impl ToolResponse {
    /// A response from tool `name` with `output`.
    pub fn new(name: impl Into<String>, output: Value) -> Self {
        Self {
            reference: None,
            name: name.into(),
            output: Some(output),
            content: None,
        }
    }

    /// The response answering `request`: same name and `ref`.
    pub fn for_request(request: &ToolRequest, output: Value) -> Self {
        Self {
            reference: request.reference.clone(),
            name: request.name.clone(),
            output: Some(output),
            content: None,
        }
    }

    /// Sets the call id (`ref`).
    pub fn with_ref(mut self, reference: impl Into<String>) -> Self {
        self.reference = Some(reference.into());
        self
    }

    /// Sets multipart content.
    pub fn with_content(mut self, content: Vec<Part>) -> Self {
        self.content = Some(content);
        self
    }
}

/// What a tool may return when it wants to send parts besides its output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MultipartToolResponse {
    /// Structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Additional parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Part>>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A reference to a resource by URI, resolved into content before the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceRef {
    /// URI of the resource.
    pub uri: String,
}

/// The content a [`Part`] carries. Exactly one per part.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PartKind {
    /// Plain text (`text`).
    Text(String),
    /// Media by URL (`media`).
    Media(Media),
    /// A request to call a tool (`toolRequest`).
    ToolRequest(ToolRequest),
    /// A tool's result (`toolResponse`).
    ToolResponse(ToolResponse),
    /// Arbitrary structured data (`data`).
    Data(Value),
    /// Provider-specific content (`custom`).
    Custom(Metadata),
    /// Model reasoning / thinking text (`reasoning`).
    Reasoning(String),
    /// A resource reference (`resource`).
    Resource(ResourceRef),
    /// No content, only the part's metadata: the placeholder a Dotprompt
    /// `{{section}}` leaves (`{"metadata": {"purpose": ..., "pending":
    /// true}}`), to be filled in later (e.g. with documents). Genkit's schema
    /// allows it; models skip it.
    Placeholder,
}

impl PartKind {
    /// The JSON key this kind is written under (`text`, `toolRequest`, ...).
    pub fn key(&self) -> &'static str {
        match self {
            PartKind::Text(_) => "text",
            PartKind::Media(_) => "media",
            PartKind::ToolRequest(_) => "toolRequest",
            PartKind::ToolResponse(_) => "toolResponse",
            PartKind::Data(_) => "data",
            PartKind::Custom(_) => "custom",
            PartKind::Reasoning(_) => "reasoning",
            PartKind::Resource(_) => "resource",
            PartKind::Placeholder => "metadata",
        }
    }
}

/// `data` / `custom` values that Genkit's schema allows *beside* another kind's content
/// (e.g. `{"text": "hi", "custom": {...}}`). Almost always absent; kept so such parts
/// round-trip losslessly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartExtensions {
    /// A `data` value next to non-data content.
    pub data: Option<Value>,
    /// A `custom` object next to non-custom content.
    pub custom: Option<Metadata>,
}

impl PartExtensions {
    fn is_empty(&self) -> bool {
        self.data.is_none() && self.custom.is_none()
    }
}

/// One piece of a [`Message`](super::Message) or [`DocumentData`](super::DocumentData).
///
/// On the wire a part is an object with one content key (`text`, `media`, `toolRequest`,
/// `toolResponse`, `data`, `custom`, `reasoning` or `resource`) plus optional `metadata`.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The content.
    pub kind: PartKind,
    /// Free-form metadata (e.g. `purpose`, `interrupt`, provider signatures).
    pub metadata: Option<Metadata>,
    /// Rare `data`/`custom` siblings of the main content; see [`PartExtensions`].
    pub extensions: Option<Box<PartExtensions>>,
}

impl Part {
    /// A part with `kind` and no metadata.
    pub fn new(kind: PartKind) -> Self {
        Self {
            kind,
            metadata: None,
            extensions: None,
        }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(PartKind::Text(text.into()))
    }

    /// A reasoning part.
    pub fn reasoning(text: impl Into<String>) -> Self {
        Self::new(PartKind::Reasoning(text.into()))
    }

    /// A media part for `url`, with an optional MIME type.
    pub fn media(url: impl Into<String>, content_type: Option<&str>) -> Self {
        Self::new(PartKind::Media(Media {
            url: url.into(),
            content_type: content_type.map(str::to_owned),
        }))
    }

    /// A tool request part.
    pub fn tool_request(request: ToolRequest) -> Self {
        Self::new(PartKind::ToolRequest(request))
    }

    /// A tool response part.
    pub fn tool_response(response: ToolResponse) -> Self {
        Self::new(PartKind::ToolResponse(response))
    }

    /// A data part.
    pub fn data(data: Value) -> Self {
        Self::new(PartKind::Data(data))
    }

    /// A custom (provider-specific) part.
    pub fn custom(custom: Metadata) -> Self {
        Self::new(PartKind::Custom(custom))
    }

    /// A resource reference part.
    pub fn resource(uri: impl Into<String>) -> Self {
        Self::new(PartKind::Resource(ResourceRef { uri: uri.into() }))
    }

    /// Sets one metadata entry, creating the metadata object if needed.
    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// The text, for text parts.
    pub fn as_text(&self) -> Option<&str> {
        match &self.kind {
            PartKind::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The reasoning text, for reasoning parts.
    pub fn as_reasoning(&self) -> Option<&str> {
        match &self.kind {
            PartKind::Reasoning(t) => Some(t),
            _ => None,
        }
    }

    /// The media, for media parts.
    pub fn as_media(&self) -> Option<&Media> {
        match &self.kind {
            PartKind::Media(m) => Some(m),
            _ => None,
        }
    }

    /// The tool request, for tool request parts.
    pub fn as_tool_request(&self) -> Option<&ToolRequest> {
        match &self.kind {
            PartKind::ToolRequest(r) => Some(r),
            _ => None,
        }
    }

    /// The tool response, for tool response parts.
    pub fn as_tool_response(&self) -> Option<&ToolResponse> {
        match &self.kind {
            PartKind::ToolResponse(r) => Some(r),
            _ => None,
        }
    }

    /// The data value, for data parts.
    pub fn as_data(&self) -> Option<&Value> {
        match &self.kind {
            PartKind::Data(d) => Some(d),
            _ => None,
        }
    }

    /// The custom object, for custom parts.
    pub fn as_custom(&self) -> Option<&Metadata> {
        match &self.kind {
            PartKind::Custom(c) => Some(c),
            _ => None,
        }
    }

    /// The resource reference, for resource parts.
    pub fn as_resource(&self) -> Option<&ResourceRef> {
        match &self.kind {
            PartKind::Resource(r) => Some(r),
            _ => None,
        }
    }

    /// True for text parts.
    pub fn is_text(&self) -> bool {
        matches!(self.kind, PartKind::Text(_))
    }

    /// True for media parts.
    pub fn is_media(&self) -> bool {
        matches!(self.kind, PartKind::Media(_))
    }

    /// True for tool request parts.
    pub fn is_tool_request(&self) -> bool {
        matches!(self.kind, PartKind::ToolRequest(_))
    }

    /// True for tool response parts.
    pub fn is_tool_response(&self) -> bool {
        matches!(self.kind, PartKind::ToolResponse(_))
    }

    /// True for data parts.
    pub fn is_data(&self) -> bool {
        matches!(self.kind, PartKind::Data(_))
    }

    /// True for custom parts.
    pub fn is_custom(&self) -> bool {
        matches!(self.kind, PartKind::Custom(_))
    }

    /// True for reasoning parts.
    pub fn is_reasoning(&self) -> bool {
        matches!(self.kind, PartKind::Reasoning(_))
    }

    /// True for resource parts.
    pub fn is_resource(&self) -> bool {
        matches!(self.kind, PartKind::Resource(_))
    }

    /// One metadata entry.
    pub fn metadata_value(&self, key: &str) -> Option<&Value> {
        self.metadata.as_ref()?.get(key)
    }

    /// True for a tool request whose metadata marks it as an interrupt (truthy `interrupt`).
    pub fn is_interrupt(&self) -> bool {
        self.is_tool_request() && self.metadata_value("interrupt").is_some_and(is_truthy)
    }
}

impl From<&str> for Part {
    fn from(text: &str) -> Self {
        Part::text(text)
    }
}

impl From<String> for Part {
    fn from(text: String) -> Self {
        Part::text(text)
    }
}

impl From<Media> for Part {
    fn from(media: Media) -> Self {
        Part::new(PartKind::Media(media))
    }
}

impl From<ToolRequest> for Part {
    fn from(request: ToolRequest) -> Self {
        Part::tool_request(request)
    }
}

impl From<ToolResponse> for Part {
    fn from(response: ToolResponse) -> Self {
        Part::tool_response(response)
    }
}

impl From<PartKind> for Part {
    fn from(kind: PartKind) -> Self {
        Part::new(kind)
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match &self.kind {
            PartKind::Text(v) => map.serialize_entry("text", v)?,
            PartKind::Media(v) => map.serialize_entry("media", v)?,
            PartKind::ToolRequest(v) => map.serialize_entry("toolRequest", v)?,
            PartKind::ToolResponse(v) => map.serialize_entry("toolResponse", v)?,
            PartKind::Data(v) => map.serialize_entry("data", v)?,
            PartKind::Custom(v) => map.serialize_entry("custom", v)?,
            PartKind::Reasoning(v) => map.serialize_entry("reasoning", v)?,
            PartKind::Resource(v) => map.serialize_entry("resource", v)?,
            // Only metadata; an empty object keeps it a part when read back.
            PartKind::Placeholder if self.metadata.is_none() => {
                map.serialize_entry("metadata", &Metadata::new())?
            }
            PartKind::Placeholder => {}
        }
        if let Some(ext) = &self.extensions {
            if let (Some(data), false) = (&ext.data, self.is_data()) {
                map.serialize_entry("data", data)?;
            }
            if let (Some(custom), false) = (&ext.custom, self.is_custom()) {
                map.serialize_entry("custom", custom)?;
            }
        }
        if let Some(metadata) = &self.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

/// Keys that each name a distinct kind of content; a part may have at most one.
const EXCLUSIVE_KEYS: [&str; 6] = [
    "text",
    "media",
    "toolRequest",
    "toolResponse",
    "reasoning",
    "resource",
];

fn typed<T: serde::de::DeserializeOwned, E: de::Error>(key: &str, value: Value) -> Result<T, E> {
    serde_json::from_value(value).map_err(|e| E::custom(format_args!("invalid part `{key}`: {e}")))
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut fields = Map::<String, Value>::deserialize(deserializer)?;

        let present: Vec<&str> = EXCLUSIVE_KEYS
            .iter()
            .copied()
            .filter(|k| fields.get(*k).is_some_and(|v| !v.is_null()))
            .collect();
        if present.len() > 1 {
            return Err(de::Error::custom(format_args!(
                "ambiguous part: it has both `{}` and `{}`; a part carries exactly one kind of content",
                present[0], present[1]
            )));
        }

        let metadata = match fields.remove("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(de::Error::custom("part `metadata` must be an object")),
        };
        let custom = match fields.remove("custom") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(de::Error::custom("part `custom` must be an object")),
        };
        let data = fields.remove("data");

        let (kind, ext) = if let Some(key) = present.first() {
            let value = fields.remove(*key).unwrap_or(Value::Null);
            let kind = match *key {
                "text" => PartKind::Text(typed(key, value)?),
                "media" => PartKind::Media(typed(key, value)?),
                "toolRequest" => PartKind::ToolRequest(typed(key, value)?),
                "toolResponse" => PartKind::ToolResponse(typed(key, value)?),
                "reasoning" => PartKind::Reasoning(typed(key, value)?),
                _ => PartKind::Resource(typed(key, value)?),
            };
            (kind, PartExtensions { data, custom })
        } else if let Some(custom) = custom {
            (
                PartKind::Custom(custom),
                PartExtensions { data, custom: None },
            )
        } else if let Some(data) = data {
            (PartKind::Data(data), PartExtensions::default())
        } else if metadata.is_some() {
            (PartKind::Placeholder, PartExtensions::default())
        } else {
            return Err(de::Error::custom(
                "part has no content: expected one of `text`, `media`, `toolRequest`, \
                 `toolResponse`, `data`, `custom`, `reasoning`, `resource` (or only `metadata`)",
            ));
        };

        Ok(Part {
            kind,
            metadata,
            extensions: (!ext.is_empty()).then(|| Box::new(ext)),
        })
    }
}

impl JsonSchema for Part {
    fn schema_name() -> Cow<'static, str> {
        "Part".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "genkit_model::Part".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let metadata = json_schema!({"type": "object", "additionalProperties": true});
        let variant = |key: &str, schema: Value| {
            let mut props = Map::new();
            props.insert(key.to_owned(), schema);
            props.insert("metadata".to_owned(), metadata.clone().to_value());
            if key != "data" {
                props.insert("data".to_owned(), Value::Bool(true));
            }
            if key != "custom" {
                props.insert(
                    "custom".to_owned(),
                    serde_json::json!({"type": "object", "additionalProperties": true}),
                );
            }
            serde_json::json!({
                "type": "object",
                "properties": props,
                "required": [key],
                "additionalProperties": false,
            })
        };
        let string = serde_json::json!({"type": "string"});
        let any_object = serde_json::json!({"type": "object", "additionalProperties": true});
        let variants = vec![
            variant("text", string.clone()),
            variant("media", generator.subschema_for::<Media>().to_value()),
            variant(
                "toolRequest",
                generator.subschema_for::<ToolRequest>().to_value(),
            ),
            variant(
                "toolResponse",
                generator.subschema_for::<ToolResponse>().to_value(),
            ),
            variant("data", Value::Bool(true)),
            variant("custom", any_object),
            variant("reasoning", string),
            variant(
                "resource",
                generator.subschema_for::<ResourceRef>().to_value(),
            ),
        ];
        json_schema!({
            "description": "One piece of message content: exactly one of text, media, toolRequest, toolResponse, data, custom, reasoning or resource, plus optional metadata.",
            "anyOf": variants,
        })
    }
}
