//! Resources: content addressed by URI (Genkit's `defineResource`). A
//! resource is an action of kind `resource` (`/resource/<name>`) serving
//! either one fixed URI or every URI of a [`UriTemplate`]; its input is
//! `{"uri": ...}` and its output `{"content": [Part, ...]}`. MCP servers
//! publish them, and [`find_matching_resource`] routes a URI to the
//! resource that serves it.
//!
//! ```
//! use genkit_model::resource::{ResourceOptions, ResourceOutput, define_resource, find_matching_resource};
//! use genkit_model::types::Part;
//!
//! # async fn run() -> genkit_core::Result<()> {
//! let registry = genkit_core::Registry::new();
//! define_resource(
//!     &registry,
//!     ResourceOptions::template("user", "users://{id}/profile").description("A user's profile."),
//!     |input, _ctx| async move {
//!         Ok(ResourceOutput::new(vec![Part::text(format!("profile of {}", input.uri))]))
//!     },
//! )?;
//! let found = find_matching_resource(&registry, &[], "users://42/profile").await?.expect("a match");
//! assert_eq!(found.variables("users://42/profile").unwrap()["id"], "42");
//! let out = found.read("users://42/profile").await?;
//! assert_eq!(out.content[0].as_text(), Some("profile of users://42/profile"));
//! // Each part says which resource it came from.
//! assert_eq!(out.content[0].metadata_value("resource").unwrap()["template"], "users://{id}/profile");
//! # Ok(())
//! # }
//! ```

mod template;

pub use template::UriTemplate;

use crate::types::Part;
use genkit_core::action::ActionCtx;
use genkit_core::{
    Action, ActionDesc, ActionKind, DynAction, Error, Registry, Result, RunOptions, StatusCode,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// What a resource action takes: the URI to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceInput {
    /// The URI (the resource's own, or one matching its template).
    pub uri: String,
}

/// What a resource action returns: the content at the URI.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceOutput {
    /// The content, as parts (text and media for MCP clients).
    pub content: Vec<Part>,
}

impl ResourceOutput {
    /// An output of `content`.
    pub fn new(content: Vec<Part>) -> Self {
        Self { content }
    }
}

/// How to define a resource: a name and either a fixed URI
/// ([`uri`](Self::uri)) or a URI template ([`template`](Self::template)).
///
/// Unlike Genkit JS, the name is required: a URI (`scheme://...`) is not a
/// valid action name here (it has an empty `/` segment).
#[derive(Debug, Clone)]
pub struct ResourceOptions {
    name: String,
    uri: Option<String>,
    template: Option<String>,
    description: Option<String>,
    metadata: Map<String, Value>,
}

impl ResourceOptions {
    /// A resource named `name` serving exactly `uri`.
    pub fn uri(name: impl Into<String>, uri: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            uri: Some(uri.into()),
            template: None,
            description: None,
            metadata: Map::new(),
        }
    }

    /// A resource named `name` serving every URI matching `template`
    /// (RFC 6570 `{var}` and `{+var}` expressions, see [`UriTemplate`]).
    pub fn template(name: impl Into<String>, template: impl Into<String>) -> Self {
        Self {
            template: Some(template.into()),
            uri: None,
            ..Self::uri(name, "")
        }
    }

    /// The resource's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets the description (MCP clients show it).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds one entry to the action's metadata (`resource`, `type` and
    /// `dynamic` are set by the resource itself and win).
    pub fn metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }
}

/// Which URIs a resource serves.
#[derive(Debug)]
enum Matcher {
    Uri(String),
    Template(UriTemplate),
}

impl Matcher {
    fn new(uri: Option<&str>, template: Option<&str>) -> Result<Self> {
        match (uri, template) {
            (Some(uri), _) if !uri.is_empty() => Ok(Matcher::Uri(uri.to_owned())),
            (_, Some(t)) => Ok(Matcher::Template(UriTemplate::parse(t)?)),
            _ => Err(Error::invalid_argument(
                "a resource needs either a uri or a template",
            )),
        }
    }

    fn variables(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match self {
            Matcher::Uri(own) => (own == uri).then(BTreeMap::new),
            Matcher::Template(t) => t.match_uri(uri),
        }
    }
}

/// A defined resource: its action and the URIs it serves.
#[derive(Clone)]
pub struct Resource {
    action: DynAction,
    matcher: Arc<Matcher>,
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource")
            .field("key", &self.action.key())
            .field("matcher", &self.matcher)
            .finish()
    }
}

impl Resource {
    /// The resource behind a `resource` action (from any registry), read
    /// from its metadata (`resource.uri` or `resource.template`); `None` for
    /// another kind of action or one without a usable URI or template.
    pub fn from_action(action: DynAction) -> Option<Self> {
        let desc = action.desc();
        if desc.kind != ActionKind::Resource {
            return None;
        }
        let meta = desc.metadata.get("resource")?;
        let field = |k: &str| meta.get(k).and_then(Value::as_str);
        let matcher = Matcher::new(field("uri"), field("template")).ok()?;
        Some(Self {
            action,
            matcher: Arc::new(matcher),
        })
    }

    /// The action's name.
    pub fn name(&self) -> &str {
        self.action.name()
    }

    /// The description, if any.
    pub fn description(&self) -> Option<&str> {
        self.action.desc().description.as_deref()
    }

    /// The fixed URI, for a resource defined with one.
    pub fn uri(&self) -> Option<&str> {
        match &*self.matcher {
            Matcher::Uri(uri) => Some(uri),
            Matcher::Template(_) => None,
        }
    }

    /// The URI template, for a resource defined with one.
    pub fn template(&self) -> Option<&UriTemplate> {
        match &*self.matcher {
            Matcher::Template(t) => Some(t),
            Matcher::Uri(_) => None,
        }
    }

    /// Whether this resource serves `uri`.
    pub fn matches(&self, uri: &str) -> bool {
        self.variables(uri).is_some()
    }

    /// The template variables `uri` gives (empty for a fixed URI), or `None`
    /// if this resource does not serve `uri`.
    pub fn variables(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        self.matcher.variables(uri)
    }

    /// Whether the resource was made with [`resource`] rather than
    /// registered with [`define_resource`] (metadata `dynamic`).
    pub fn is_dynamic(&self) -> bool {
        self.action.desc().metadata.get("dynamic") == Some(&Value::Bool(true))
    }

    /// The resource as an erased action.
    pub fn to_dyn(&self) -> DynAction {
        self.action.clone()
    }

    /// Reads `uri` (runs the action, traced).
    pub async fn read(&self, uri: &str) -> Result<ResourceOutput> {
        self.read_with(uri, RunOptions::default()).await
    }

    /// Reads `uri` with run options (context, cancellation, registry...).
    pub async fn read_with(&self, uri: &str, opts: RunOptions<Value>) -> Result<ResourceOutput> {
        let out = self
            .action
            .run_json(json!({ "uri": uri }), opts)
            .await?
            .output;
        serde_json::from_value(out).map_err(|e| {
            Error::internal(format!(
                "resource `{}` returned an invalid output: {e}",
                self.name()
            ))
        })
    }
}

/// Builds a resource without registering it (Genkit JS's `resource`): its
/// metadata says `dynamic: true`. `f` receives the URI read and returns the
/// content; each returned part gets `metadata.resource` naming the URI (and
/// template), or, when a part already names its own resource, that
/// resource's `parent`.
pub fn resource<F, Fut>(opts: ResourceOptions, f: F) -> Result<Resource>
where
    F: Fn(ResourceInput, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ResourceOutput>> + Send + 'static,
{
    build(opts, true, f)
}

/// Defines a resource and registers it as `/resource/<name>` (Genkit JS's
/// `defineResource`); see [`resource`] for what `f` does.
pub fn define_resource<F, Fut>(registry: &Registry, opts: ResourceOptions, f: F) -> Result<Resource>
where
    F: Fn(ResourceInput, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ResourceOutput>> + Send + 'static,
{
    let resource = build(opts, false, f)?;
    registry.register(resource.to_dyn())?;
    Ok(resource)
}

fn build<F, Fut>(opts: ResourceOptions, dynamic: bool, f: F) -> Result<Resource>
where
    F: Fn(ResourceInput, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ResourceOutput>> + Send + 'static,
{
    let matcher = Arc::new(Matcher::new(opts.uri.as_deref(), opts.template.as_deref())?);
    let mut location = Map::new();
    if let Some(uri) = opts.uri.as_ref().filter(|u| !u.is_empty()) {
        location.insert("uri".into(), Value::from(uri.clone()));
    } else if let Some(t) = &opts.template {
        location.insert("template".into(), Value::from(t.clone()));
    }
    let template = location.get("template").cloned();
    let mut desc = ActionDesc::new(ActionKind::Resource, opts.name);
    desc.description = opts.description;
    desc.metadata = opts.metadata;
    desc.metadata
        .insert("resource".into(), Value::Object(location));
    desc.metadata.insert("type".into(), Value::from("resource"));
    desc.metadata.insert("dynamic".into(), Value::Bool(dynamic));
    desc.input_schema = Some(genkit_core::schema::schema_for::<ResourceInput>());
    desc.output_schema = Some(genkit_core::schema::schema_for::<ResourceOutput>());
    let name = desc.name.clone();
    let serves = matcher.clone();
    let action = Action::<ResourceInput, ResourceOutput>::from_desc_typed(
        desc,
        move |input: ResourceInput, ctx: ActionCtx| {
            let matched = serves.variables(&input.uri).is_some();
            let run = matched.then(|| f(input.clone(), ctx));
            let (name, template) = (name.clone(), template.clone());
            async move {
                let Some(run) = run else {
                    return Err(Error::new(
                        StatusCode::InvalidArgument,
                        format!("resource `{name}` does not serve the URI `{}`", input.uri),
                    ));
                };
                let mut out = run.await?;
                for part in &mut out.content {
                    mark_source(part, &input.uri, template.as_ref());
                }
                Ok(out)
            }
        },
    );
    Ok(Resource {
        action: action.to_dyn(),
        matcher,
    })
}

/// Records where a part came from: `metadata.resource = {uri, template?}`,
/// or, if the part names its own resource already, that resource's
/// `parent` (unless it has one).
fn mark_source(part: &mut Part, uri: &str, template: Option<&Value>) {
    let mut source = Map::new();
    source.insert("uri".into(), Value::from(uri));
    if let Some(t) = template {
        source.insert("template".into(), t.clone());
    }
    let metadata = part.metadata.get_or_insert_with(Map::new);
    match metadata.get_mut("resource").and_then(Value::as_object_mut) {
        Some(own) => {
            own.entry("parent").or_insert(Value::Object(source));
        }
        None => {
            metadata.insert("resource".into(), Value::Object(source));
        }
    }
}

/// Every resource registered in `registry` (and its ancestors), after
/// initialising plugins, by name.
pub async fn list_resources(registry: &Registry) -> Result<Vec<Resource>> {
    Ok(registry
        .list_actions()
        .await?
        .into_values()
        .filter_map(Resource::from_action)
        .collect())
}

/// The resource serving `uri` (Genkit JS's `findMatchingResource`): the
/// first of `resources` that matches, else the first registered
/// `/resource/` action of `registry` (by name) that does, else the first
/// resource a dynamic action provider (an MCP host) offers that does.
pub async fn find_matching_resource(
    registry: &Registry,
    resources: &[Resource],
    uri: &str,
) -> Result<Option<Resource>> {
    if let Some(r) = resources.iter().find(|r| r.matches(uri)) {
        return Ok(Some(r.clone()));
    }
    for key in registry.list_resolvable_actions().await.into_keys() {
        // Registered resources, then those of dynamic action providers
        // (`/dynamic-action-provider/<host>:resource/<name>`, e.g. an MCP
        // server's), which sort after them.
        let dynamic = genkit_core::DynamicKey::parse(&key)
            .is_some_and(|k| k.kind == ActionKind::Resource && !k.is_pattern());
        if !key.starts_with("/resource/") && !dynamic {
            continue;
        }
        if let Some(r) = registry
            .lookup_action(&key)
            .await?
            .and_then(Resource::from_action)
            .filter(|r| r.matches(uri))
        {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(uri: &str) -> ResourceOutput {
        ResourceOutput::new(vec![Part::text(format!("at {uri}"))])
    }

    #[tokio::test]
    async fn fixed_uri_resource_reads_and_marks_parts() {
        let registry = Registry::new();
        let readme = define_resource(
            &registry,
            ResourceOptions::uri("readme", "docs://readme")
                .description("The readme.")
                .metadata("owner", json!("docs")),
            |input, _ctx| async move { Ok(text(&input.uri)) },
        )
        .unwrap();
        let desc = readme.to_dyn().desc().clone();
        assert_eq!(desc.key(), "/resource/readme");
        assert_eq!(desc.metadata["resource"], json!({"uri": "docs://readme"}));
        assert_eq!(desc.metadata["type"], json!("resource"));
        assert_eq!(desc.metadata["dynamic"], json!(false));
        assert_eq!(desc.metadata["owner"], json!("docs"));
        assert_eq!(readme.uri(), Some("docs://readme"));
        assert!(readme.template().is_none());
        assert_eq!(readme.description(), Some("The readme."));
        assert!(!readme.is_dynamic());

        let out = readme.read("docs://readme").await.unwrap();
        assert_eq!(out.content[0].as_text(), Some("at docs://readme"));
        assert_eq!(
            out.content[0].metadata_value("resource"),
            Some(&json!({"uri": "docs://readme"}))
        );
        let err = readme.read("docs://other").await.unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
        assert!(err.message().contains("docs://other"), "{err}");
    }

    #[tokio::test]
    async fn templated_resource_marks_parents_and_is_found_by_uri() {
        let registry = Registry::new();
        define_resource(
            &registry,
            ResourceOptions::template("file", "file:///{+path}"),
            |input, _ctx| async move {
                let own = Part::text("inner").with_metadata("resource", json!({"uri": "x://y"}));
                Ok(ResourceOutput::new(vec![Part::text(input.uri), own]))
            },
        )
        .unwrap();
        define_resource(
            &registry,
            ResourceOptions::uri("fixed", "docs://readme"),
            |input, _ctx| async move { Ok(text(&input.uri)) },
        )
        .unwrap();

        let found = find_matching_resource(&registry, &[], "file:///a/b.txt")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.name(), "file");
        assert_eq!(found.template().unwrap().as_str(), "file:///{+path}");
        assert_eq!(
            found.variables("file:///a/b.txt").unwrap()["path"],
            "a/b.txt"
        );
        let out = found.read("file:///a/b.txt").await.unwrap();
        assert_eq!(
            out.content[0].metadata_value("resource"),
            Some(&json!({"uri": "file:///a/b.txt", "template": "file:///{+path}"}))
        );
        assert_eq!(
            out.content[1].metadata_value("resource"),
            Some(
                &json!({"uri": "x://y", "parent": {"uri": "file:///a/b.txt", "template": "file:///{+path}"}})
            )
        );
        assert!(
            find_matching_resource(&registry, &[], "nothing://here")
                .await
                .unwrap()
                .is_none()
        );
        let names: Vec<String> = list_resources(&registry)
            .await
            .unwrap()
            .iter()
            .map(|r| r.name().to_owned())
            .collect();
        assert_eq!(names, ["file", "fixed"]);
    }

    #[tokio::test]
    async fn dynamic_resources_come_first_and_bad_options_fail() {
        let registry = Registry::new();
        define_resource(
            &registry,
            ResourceOptions::uri("registered", "docs://readme"),
            |input, _ctx| async move { Ok(text(&input.uri)) },
        )
        .unwrap();
        let dynamic = resource(
            ResourceOptions::uri("dynamic", "docs://readme"),
            |_input, _ctx| async move { Ok(ResourceOutput::default()) },
        )
        .unwrap();
        assert!(dynamic.is_dynamic());
        let found = find_matching_resource(&registry, &[dynamic], "docs://readme")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.name(), "dynamic");

        let no_location = ResourceOptions::uri("x", "");
        let err = resource(no_location, |_i, _c| async move {
            Ok(ResourceOutput::default())
        })
        .unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
        let bad_template = ResourceOptions::template("x", "u://{#frag}");
        assert!(
            resource(bad_template, |_i, _c| async move {
                Ok(ResourceOutput::default())
            })
            .is_err()
        );

        // Not a resource action: no resource.
        let tool =
            Action::<Value, Value>::new(ActionKind::Tool, "t", |v, _ctx: ActionCtx| async move {
                Ok(v)
            });
        assert!(Resource::from_action(tool.to_dyn()).is_none());
    }
}
