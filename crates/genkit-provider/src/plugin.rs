//! Scaffolding plugins share: builder validation, extra headers, lists of
//! model and embedder specs, request-config parsing, and the checks of a
//! text embedder.

use crate::{ApiKey, ProviderInfo};
use genkit_core::{Error, Result};
use genkit_model::embedder::{EmbedderInfo, EmbedderSupports};
use genkit_model::types::EmbedRequest;
use reqwest::header::{HeaderMap, HeaderName};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Checks a plugin name: non-empty, without `/` (it is the namespace of the
/// plugin's actions). `INVALID_ARGUMENT` otherwise.
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') {
        return Err(Error::invalid_argument(format!(
            "plugin name `{name}` must be non-empty and hold no `/`"
        )));
    }
    Ok(())
}

/// Checks that `url` is an `http` or `https` URL; `what` names it in the
/// message (e.g. `base URL`). `INVALID_ARGUMENT` otherwise.
pub fn validate_http_url(what: &str, url: &str) -> Result<()> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| Error::invalid_argument(format!("{what} `{url}`: {e}")).with_source(e))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::invalid_argument(format!(
            "{what} `{url}` must be http or https"
        )));
    }
    Ok(())
}

/// Extra headers given to a builder as `(name, value)` pairs, as a header
/// map whose values are marked sensitive. An invalid name or value is
/// `INVALID_ARGUMENT` (the message never repeats the value).
pub fn header_map(headers: &[(String, ApiKey)]) -> Result<HeaderMap> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let n = HeaderName::try_from(name.as_str()).map_err(|e| {
            Error::invalid_argument(format!("header name `{name}`: {e}")).with_source(e)
        })?;
        let v = value.header_value().map_err(|_| {
            Error::invalid_argument(format!("the value of header `{name}` is not valid"))
        })?;
        map.append(n, v);
    }
    Ok(map)
}

/// A model or embedder description a plugin knows by name.
pub trait Spec: Clone {
    /// The name at the provider, without the plugin prefix.
    fn name(&self) -> &str;
    /// The spec of a model the plugin has no entry for.
    fn unlisted(name: &str) -> Self;
}

/// The specs a plugin lists, by name.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecList<T>(Vec<T>);

impl<T> Default for SpecList<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T: Spec> SpecList<T> {
    /// A list holding `specs`.
    pub fn new(specs: impl IntoIterator<Item = T>) -> Self {
        Self(specs.into_iter().collect())
    }

    /// Adds `spec`, replacing one of the same name.
    pub fn upsert(&mut self, spec: T) {
        self.0.retain(|s| s.name() != spec.name());
        self.0.push(spec);
    }

    /// The spec named `name`, or [`Spec::unlisted`] when there is none.
    pub fn get_or_unlisted(&self, name: &str) -> T {
        self.0
            .iter()
            .find(|s| s.name() == name)
            .cloned()
            .unwrap_or_else(|| T::unlisted(name))
    }

    /// The specs, in order.
    pub fn as_slice(&self) -> &[T] {
        &self.0
    }
}

/// Parses a request's `config` (absent or `null` is the default; `null`
/// members count as absent) as provider `info` reads it: `apiKey` refused
/// unless it takes request keys (configs are traced), its ignored keys
/// dropped. `what` names the config in messages (`model`, `embedder`). The
/// error is the message for an invalid-request error.
pub fn parse_request_config<T: DeserializeOwned + Default>(
    config: Option<&Value>,
    what: &str,
    info: &ProviderInfo,
) -> std::result::Result<T, String> {
    let Some(value) = config.filter(|v| !v.is_null()) else {
        return Ok(T::default());
    };
    let Value::Object(map) = value else {
        return Err(format!("the {what} config must be a JSON object"));
    };
    if !info.request_keys && map.contains_key("apiKey") {
        return Err(format!(
            "`apiKey` in the request config is not supported (it would be recorded in traces); configure the API key on the {} plugin",
            info.display
        ));
    }
    // `null` members count as absent (and are never sent on).
    let mut map: serde_json::Map<String, Value> = map
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for key in info.ignored_config_keys {
        map.remove(*key);
    }
    serde_json::from_value(Value::Object(map)).map_err(|e| format!("invalid {what} config: {e}"))
}

/// An embedding model a plugin offers.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderSpec {
    /// The model's name at the provider, without the plugin prefix.
    pub name: String,
    /// A human-readable label.
    pub label: Option<String>,
    /// Vector length, when known.
    pub dimensions: Option<u32>,
}

impl EmbedderSpec {
    /// An embedder of unknown dimensions.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            label: None,
            dimensions: None,
        }
    }

    /// Sets the vector length.
    pub fn dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// Sets the label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

impl Spec for EmbedderSpec {
    fn name(&self) -> &str {
        &self.name
    }

    fn unlisted(name: &str) -> Self {
        EmbedderSpec::new(name)
    }
}

/// Reads a request's options (`EmbedRequest.options`, a model config...):
/// absent or `null` gives the defaults, `null` members count as absent.
pub fn parse_options<T: DeserializeOwned + Default>(
    options: Option<&Value>,
) -> std::result::Result<T, serde_json::Error> {
    match options {
        None | Some(Value::Null) => Ok(T::default()),
        Some(Value::Object(map)) => serde_json::from_value(Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )),
        Some(other) => serde_json::from_value(other.clone()),
    }
}

/// The text of each document of an embed request, as JSON strings for a
/// request body; a document without text is `INVALID_ARGUMENT`.
pub fn embed_texts(request: &EmbedRequest, embedder: &str) -> Result<Vec<Value>> {
    request
        .input
        .iter()
        .enumerate()
        .map(|(i, doc)| {
            let text = doc.text();
            if text.is_empty() {
                return Err(Error::invalid_argument(format!(
                    "document {i} has no text: embedder `{embedder}` embeds text only"
                )));
            }
            Ok(Value::from(text))
        })
        .collect()
}

/// `INTERNAL` unless the provider returned one vector per document.
pub fn check_embedding_count(provider: &str, got: usize, wanted: usize) -> Result<()> {
    if got != wanted {
        return Err(Error::internal(format!(
            "malformed response from {provider}: {got} embeddings for {wanted} documents"
        )));
    }
    Ok(())
}

/// What a text-only embedder reports about itself.
pub fn text_embedder_info(label: String, dimensions: Option<u32>) -> EmbedderInfo {
    EmbedderInfo {
        label: Some(label),
        dimensions,
        supports: Some(EmbedderSupports {
            input: Some(vec!["text".into()]),
            multilingual: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_core::StatusCode;
    use genkit_model::types::DocumentData;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Clone, PartialEq)]
    struct S(String, u8);

    impl Spec for S {
        fn name(&self) -> &str {
            &self.0
        }
        fn unlisted(name: &str) -> Self {
            S(name.into(), 0)
        }
    }

    #[test]
    fn names_and_urls() {
        assert!(validate_name("openai").is_ok());
        assert!(validate_name("").is_err());
        assert_eq!(
            validate_name("a/b").unwrap_err().status(),
            StatusCode::InvalidArgument
        );
        assert!(validate_http_url("base URL", "https://api.x/v1").is_ok());
        assert!(validate_http_url("base URL", "not a url").is_err());
        let err = validate_http_url("server address", "ftp://x").unwrap_err();
        assert!(
            err.message()
                .contains("server address `ftp://x` must be http or https")
        );
    }

    #[test]
    fn headers_are_validated_and_sensitive() {
        let map = header_map(&[("OpenAI-Organization".into(), "org".into())]).unwrap();
        assert!(map["openai-organization"].is_sensitive());
        assert!(header_map(&[("bad name".into(), "x".into())]).is_err());
        let err = header_map(&[("x-key".into(), "sec\nret".into())]).unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
        assert!(!err.message().contains("sec"));
    }

    #[test]
    fn spec_lists() {
        let mut list = SpecList::new([S("a".into(), 1), S("b".into(), 2)]);
        list.upsert(S("a".into(), 3));
        assert_eq!(list.as_slice(), &[S("b".into(), 2), S("a".into(), 3)]);
        assert_eq!(list.get_or_unlisted("a"), S("a".into(), 3));
        assert_eq!(list.get_or_unlisted("zz"), S("zz".into(), 0));
        let embedders = SpecList::new([EmbedderSpec::new("e").dimensions(3).label("E")]);
        assert_eq!(embedders.get_or_unlisted("e").dimensions, Some(3));
        assert_eq!(embedders.get_or_unlisted("x"), EmbedderSpec::new("x"));
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Opts {
        #[serde(default)]
        n: Option<u32>,
    }

    #[test]
    fn request_configs() {
        let info = ProviderInfo {
            ignored_config_keys: &["baseUrl"],
            ..ProviderInfo::new("Hosted", "hosted", "https://api.hosted")
        };
        let parse = |v: Option<Value>| parse_request_config::<Opts>(v.as_ref(), "model", &info);
        assert_eq!(parse(None).unwrap(), Opts::default());
        assert_eq!(parse(Some(Value::Null)).unwrap(), Opts::default());
        assert_eq!(
            parse(Some(json!({"n": 3, "baseUrl": "http://x"}))).unwrap(),
            Opts { n: Some(3) }
        );
        let refused = parse(Some(json!({"apiKey": "secret-1"}))).unwrap_err();
        assert!(refused.contains("`apiKey`") && refused.contains("Hosted plugin"));
        assert!(!refused.contains("secret-1"));
        assert_eq!(
            parse(Some(json!([1]))).unwrap_err(),
            "the model config must be a JSON object"
        );
        assert!(
            parse(Some(json!({"n": "many"})))
                .unwrap_err()
                .starts_with("invalid model config: ")
        );
    }

    #[test]
    fn options_and_texts() {
        assert_eq!(parse_options::<Opts>(None).unwrap(), Opts::default());
        assert_eq!(
            parse_options::<Opts>(Some(&json!({"n": null}))).unwrap(),
            Opts::default()
        );
        assert_eq!(
            parse_options::<Opts>(Some(&json!({"n": 2}))).unwrap(),
            Opts { n: Some(2) }
        );
        assert!(parse_options::<Opts>(Some(&json!("x"))).is_err());

        let mut request = EmbedRequest {
            input: vec![DocumentData::from_text("cat")],
            options: None,
        };
        assert_eq!(embed_texts(&request, "e").unwrap(), vec![json!("cat")]);
        request.input.push(DocumentData::from_text(""));
        let err = embed_texts(&request, "e").unwrap_err();
        assert!(err.message().contains("document 1 has no text"), "{err}");
        assert!(check_embedding_count("p", 2, 2).is_ok());
        assert_eq!(
            check_embedding_count("p", 1, 2).unwrap_err().status(),
            StatusCode::Internal
        );
        let info = text_embedder_info("L".into(), Some(3));
        assert_eq!(info.dimensions, Some(3));
    }
}
