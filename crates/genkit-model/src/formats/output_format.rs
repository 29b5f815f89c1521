//! [`OutputFormat`]: the typed name of an output format.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Which output format a generate call or prompt asks for. The built-in
/// formats are variants; any other name is [`OutputFormat::Custom`], a format
/// registered with [`define_format`](super::define_format).
///
/// On the wire it is the bare name (`"json"`, `"myFormat"`), as Genkit JS
/// writes `output.format`.
///
/// ```
/// use genkit_model::formats::OutputFormat;
/// assert_eq!(OutputFormat::from("jsonl"), OutputFormat::Jsonl);
/// assert_eq!(OutputFormat::from("csv"), OutputFormat::Custom("csv".into()));
/// assert_eq!(OutputFormat::Enum.name(), "enum");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    /// `json`: one JSON value.
    Json,
    /// `array`: a JSON array, streamed item by item.
    Array,
    /// `enum`: one of the schema's enum values.
    Enum,
    /// `jsonl`: one JSON object per line.
    Jsonl,
    /// `text`: plain text.
    Text,
    /// A format registered under this name.
    Custom(String),
}

impl OutputFormat {
    /// A custom format by name (a built-in name gives the built-in variant).
    pub fn custom(name: impl Into<String>) -> Self {
        Self::from(name.into())
    }

    /// The registered name.
    pub fn name(&self) -> &str {
        match self {
            Self::Json => "json",
            Self::Array => "array",
            Self::Enum => "enum",
            Self::Jsonl => "jsonl",
            Self::Text => "text",
            Self::Custom(name) => name,
        }
    }

    /// Whether this is one of the built-in formats.
    pub fn is_builtin(&self) -> bool {
        !matches!(self, Self::Custom(_))
    }

    fn builtin(name: &str) -> Option<Self> {
        Some(match name {
            "json" => Self::Json,
            "array" => Self::Array,
            "enum" => Self::Enum,
            "jsonl" => Self::Jsonl,
            "text" => Self::Text,
            _ => return None,
        })
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<&str> for OutputFormat {
    fn from(name: &str) -> Self {
        Self::builtin(name).unwrap_or_else(|| Self::Custom(name.to_owned()))
    }
}

impl From<String> for OutputFormat {
    fn from(name: String) -> Self {
        Self::builtin(&name).unwrap_or(Self::Custom(name))
    }
}

impl From<&String> for OutputFormat {
    fn from(name: &String) -> Self {
        Self::from(name.as_str())
    }
}

impl From<OutputFormat> for String {
    fn from(format: OutputFormat) -> Self {
        match format {
            OutputFormat::Custom(name) => name,
            builtin => builtin.name().to_owned(),
        }
    }
}

impl Serialize for OutputFormat {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for OutputFormat {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

impl JsonSchema for OutputFormat {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OutputFormat".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_the_wire_form() {
        for name in ["json", "array", "enum", "jsonl", "text", "csv"] {
            let format = OutputFormat::from(name);
            assert_eq!(format.name(), name);
            assert_eq!(serde_json::to_value(&format).unwrap(), name);
            let back: OutputFormat = serde_json::from_value(name.into()).unwrap();
            assert_eq!(back, format);
            assert_eq!(String::from(format.clone()), name);
        }
        assert!(OutputFormat::Json.is_builtin());
        assert!(!OutputFormat::custom("csv").is_builtin());
        assert_eq!(OutputFormat::custom("text"), OutputFormat::Text);
    }
}
