//! The registry's Dotprompt environment: one [`Dotprompt`] per registry tree
//! holding the helpers and partials every prompt of that tree can use, plus
//! named schemas (kept in the registry itself).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use dotprompt::{BoxError, Dotprompt};
use genkit_core::{Error, Registry, Result};
use parking_lot::RwLock;
use schemars::JsonSchema;
use serde_json::Value;

use super::errors::{SourceRef, from_dotprompt};

/// Object kind under which the environment is stored in the root registry.
const ENV_KIND: &str = "dotprompt";
const ENV_NAME: &str = "default";

/// Serializes the creation of environments, so two threads asking a fresh
/// registry for its environment get the same one.
static CREATE: Mutex<()> = Mutex::new(());

/// The Dotprompt environment of a registry tree.
pub(crate) struct PromptEnv {
    /// Helpers, partials and the compiled-template cache.
    pub(crate) dotprompt: Dotprompt,
    /// Files partials were loaded from, to name them in errors.
    partial_files: RwLock<HashMap<String, PathBuf>>,
}

impl PromptEnv {
    /// The file a partial was loaded from, if it came from a file.
    pub(crate) fn partial_file(&self, name: &str) -> Option<PathBuf> {
        self.partial_files.read().get(name).cloned()
    }
}

/// The environment of `registry`'s tree, created on first use and stored in
/// the root registry (child registries share their root's helpers and
/// partials, as in Genkit).
pub(crate) fn env(registry: &Registry) -> Arc<PromptEnv> {
    if let Some(found) = registry.lookup_object::<PromptEnv>(ENV_KIND, ENV_NAME) {
        return found;
    }
    let _guard = CREATE.lock().unwrap_or_else(PoisonError::into_inner);
    let mut root = registry;
    while let Some(parent) = root.parent() {
        root = parent;
    }
    if let Some(found) = root.lookup_object::<PromptEnv>(ENV_KIND, ENV_NAME) {
        return found;
    }
    let created = Arc::new(PromptEnv {
        dotprompt: Dotprompt::default(),
        partial_files: RwLock::new(HashMap::new()),
    });
    root.register_object(ENV_KIND, ENV_NAME, Arc::clone(&created));
    created
}

/// Registers (or replaces) a Handlebars partial, usable as `{{> name}}` by
/// every prompt of the registry. Fails with `INVALID_ARGUMENT` if the
/// partial does not parse or would make partials include each other in a
/// cycle.
pub fn define_partial(registry: &Registry, name: &str, source: &str) -> Result<()> {
    let env = env(registry);
    env.dotprompt
        .define_partial(name, source)
        .map_err(|e| from_dotprompt(e, &SourceRef::partial(name), &env))?;
    env.partial_files.write().remove(name);
    Ok(())
}

/// Registers a partial read from `path` (a `_name.prompt` file).
pub(crate) fn define_partial_file(
    registry: &Registry,
    name: &str,
    source: &str,
    path: &Path,
) -> Result<()> {
    let env = env(registry);
    env.partial_files
        .write()
        .insert(name.to_owned(), path.to_owned());
    env.dotprompt
        .define_partial(name, source)
        .map_err(|e| from_dotprompt(e, &SourceRef::partial_file(name, path), &env))?;
    Ok(())
}

/// Registers a Handlebars helper for every prompt of the registry: a
/// function of the positional and the hash (`key=value`) arguments whose
/// result is inserted (strings verbatim) or fed to an enclosing helper.
///
/// ```
/// # use genkit_prompt::define_helper;
/// # use serde_json::Value;
/// let registry = genkit_core::Registry::new();
/// define_helper(&registry, "shout", |args, _hash| {
///     Ok(Value::from(args.first().and_then(Value::as_str).unwrap_or_default().to_uppercase()))
/// });
/// ```
pub fn define_helper<F>(registry: &Registry, name: &str, helper: F)
where
    F: Fn(&[Value], &serde_json::Map<String, Value>) -> Result<Value, BoxError>
        + Send
        + Sync
        + 'static,
{
    env(registry).dotprompt.define_helper(name, helper);
}

/// Registers a named JSON Schema that prompts can use by name in Picoschema
/// (`input: {schema: Person}`, `friends(array): Person`). Names are looked up
/// when a prompt is first used, so schemas may be defined after prompt files
/// are loaded. A name already registered is `ALREADY_EXISTS`.
pub fn define_schema(registry: &Registry, name: &str, schema: Value) -> Result<()> {
    if !schema.is_object() && !schema.is_boolean() {
        return Err(Error::invalid_argument(format!(
            "schema `{name}` must be a JSON Schema object, got {schema}"
        )));
    }
    registry.register_schema(name, schema)
}

/// Registers the JSON Schema of `T` under `name` (see [`define_schema`]).
pub fn define_schema_for<T: JsonSchema>(registry: &Registry, name: &str) -> Result<()> {
    let mut schema = genkit_core::schema::schema_for::<T>();
    // Embedded in other schemas, the draft marker is noise.
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    define_schema(registry, name, schema)
}
