//! `define_simple_retriever`: a retriever over any search function, its
//! items mapped to documents as Genkit JS's `defineSimpleRetriever` maps
//! them.
//!
//! An item that serializes to a string becomes a text document with no
//! metadata. Otherwise the document's content is the item's field named by
//! [`SimpleContent::Key`], or what [`SimpleContent::Fn`] makes of it; its
//! metadata is the named fields ([`SimpleMetadata::Keys`]), what a function
//! makes of it ([`SimpleMetadata::Fn`]), or by default all the item's fields
//! but the content field.

use crate::retriever::{Retriever, RetrieverOptions, define_retriever};
use genkit_core::{Error, Registry, Result};
use genkit_model::types::{DocumentData, Metadata, Part, RetrieverResponse};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// What a content function makes of an item: a text or parts.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemContent {
    /// One text part.
    Text(String),
    /// These parts.
    Parts(Vec<Part>),
}

impl From<String> for ItemContent {
    fn from(s: String) -> Self {
        Self::Text(s)
    }
}

impl From<&str> for ItemContent {
    fn from(s: &str) -> Self {
        Self::Text(s.into())
    }
}

impl From<Vec<Part>> for ItemContent {
    fn from(p: Vec<Part>) -> Self {
        Self::Parts(p)
    }
}

type ContentFn<T> = Arc<dyn Fn(&T) -> ItemContent + Send + Sync>;
type MetadataFn<T> = Arc<dyn Fn(&T) -> Option<Metadata> + Send + Sync>;

/// Where a document's content comes from.
pub enum SimpleContent<T> {
    /// Only string items are accepted (the default).
    None,
    /// The item's string field of this name.
    Key(String),
    /// A function of the item.
    Fn(ContentFn<T>),
}

/// Where a document's metadata comes from (for items that are not strings).
pub enum SimpleMetadata<T> {
    /// All the item's fields but the content field.
    Default,
    /// These fields of the item.
    Keys(Vec<String>),
    /// A function of the item.
    Fn(MetadataFn<T>),
}

/// How to define a simple retriever over items of type `T`.
pub struct SimpleRetrieverOptions<T> {
    /// The retriever's name.
    pub name: String,
    /// Where content comes from.
    pub content: SimpleContent<T>,
    /// Where metadata comes from.
    pub metadata: SimpleMetadata<T>,
}

impl<T> SimpleRetrieverOptions<T> {
    /// Options for a retriever named `name` over string items.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            content: SimpleContent::None,
            metadata: SimpleMetadata::Default,
        }
    }

    /// Takes the content from the item's string field `key`.
    pub fn content_key(mut self, key: impl Into<String>) -> Self {
        self.content = SimpleContent::Key(key.into());
        self
    }

    /// Makes the content with a function of the item.
    pub fn content_fn<C: Into<ItemContent>>(
        mut self,
        f: impl Fn(&T) -> C + Send + Sync + 'static,
    ) -> Self {
        self.content = SimpleContent::Fn(Arc::new(move |t| f(t).into()));
        self
    }

    /// Takes the metadata from these fields of the item.
    pub fn metadata_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.metadata = SimpleMetadata::Keys(keys.into_iter().map(Into::into).collect());
        self
    }

    /// Makes the metadata with a function of the item.
    pub fn metadata_fn(
        mut self,
        f: impl Fn(&T) -> Option<Metadata> + Send + Sync + 'static,
    ) -> Self {
        self.metadata = SimpleMetadata::Fn(Arc::new(f));
        self
    }
}

fn item_json(item: &Value) -> String {
    serde_json::to_string(item).unwrap_or_default()
}

/// One item as a document, as Genkit JS's `itemToDocument` and
/// `itemToMetadata` make it.
fn item_to_document<T: Serialize>(
    item: &T,
    opts: &SimpleRetrieverOptions<T>,
) -> Result<DocumentData> {
    let value = serde_json::to_value(item).map_err(|e| {
        Error::invalid_argument(format!(
            "an item of simple retriever {} does not serialize: {e}",
            opts.name
        ))
        .with_source(e)
    })?;
    match &value {
        Value::Null => {
            return Err(Error::invalid_argument(
                "Items returned from simple retriever must be non-null.",
            ));
        }
        Value::String(s) => return Ok(DocumentData::from_text(s.clone())),
        _ => {}
    }
    let content = match &opts.content {
        SimpleContent::Fn(f) => match f(item) {
            ItemContent::Text(t) => vec![Part::text(t)],
            ItemContent::Parts(p) => p,
        },
        SimpleContent::Key(key) if value.is_object() => match value.get(key) {
            Some(Value::String(s)) => vec![Part::text(s.clone())],
            _ => {
                return Err(Error::invalid_argument(format!(
                    "Item has no string field `{key}` for the content of simple retriever {}. Item: {}",
                    opts.name,
                    item_json(&value)
                )));
            }
        },
        _ => {
            return Err(Error::invalid_argument(format!(
                "Cannot convert item to document without content option. Item: {}",
                item_json(&value)
            )));
        }
    };
    let metadata = match (&opts.metadata, &value) {
        (SimpleMetadata::Fn(f), _) => f(item),
        (SimpleMetadata::Keys(keys), Value::Object(map)) => Some(
            keys.iter()
                .filter_map(|k| map.get(k).map(|v| (k.clone(), v.clone())))
                .collect(),
        ),
        (SimpleMetadata::Default, Value::Object(map)) => {
            let mut out = map.clone();
            if let SimpleContent::Key(key) = &opts.content {
                out.remove(key);
            }
            Some(out)
        }
        _ => {
            return Err(Error::invalid_argument(format!(
                "Unable to extract metadata from item with supplied options. Item: {}",
                item_json(&value)
            )));
        }
    };
    Ok(DocumentData { content, metadata })
}

/// Defines a retriever over `search`, whose items become documents as the
/// options say, registered as `/retriever/<name>`.
pub fn define_simple_retriever<T, O, F, Fut>(
    registry: &Registry,
    opts: SimpleRetrieverOptions<T>,
    search: F,
) -> Result<Retriever<O>>
where
    T: Serialize + Send + Sync + 'static,
    O: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(DocumentData, Option<O>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<T>>> + Send + 'static,
{
    let name = opts.name.clone();
    let opts = Arc::new(opts);
    let search = Arc::new(search);
    define_retriever(
        registry,
        RetrieverOptions::new(name),
        move |query, options, _ctx| {
            let opts = opts.clone();
            let search = search.clone();
            async move {
                let items = search(query, options).await?;
                let documents = items
                    .iter()
                    .map(|item| item_to_document(item, &opts))
                    .collect::<Result<Vec<_>>>()?;
                Ok(RetrieverResponse::new(documents))
            }
        },
    )
}
