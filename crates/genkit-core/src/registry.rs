//! The Registry: every action by key (`/kind/name`), plugins initialised
//! lazily, named values and schemas, and child registries that overlay a
//! parent.

use crate::action::{Action, ActionDesc, ActionKey, ActionKind, DynAction, IntoDynAction};
use crate::dynamic::{DynamicActionProvider, DynamicKey};
use crate::error::{Error, Result};
use crate::plugin::Plugin;
use crate::status::StatusCode;
use crate::tracing::Frame;
use futures::future::BoxFuture;
use parking_lot::RwLock;
use serde_json::Value;
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::OnceCell;

/// The object kind dynamic action providers are kept under.
const DYNAMIC_PROVIDERS: &str = "dynamic-action-provider";

/// A registered dynamic action provider (objects must be sized).
struct ProviderSlot(Arc<dyn DynamicActionProvider>);

/// Holds actions, plugins, values and schemas. Cheap to clone (shared).
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct PluginSlot {
    plugin: Arc<dyn Plugin>,
    initialized: OnceCell<()>,
}

#[derive(Default)]
struct Inner {
    parent: Option<Registry>,
    actions: RwLock<HashMap<String, DynAction>>,
    plugins: RwLock<Vec<Arc<PluginSlot>>>,
    values: RwLock<HashMap<String, HashMap<String, Value>>>,
    objects: RwLock<HashMap<(String, String), Arc<dyn Any + Send + Sync>>>,
    schemas: RwLock<HashMap<String, Value>>,
    /// Registrations so far (see [`Registry::subscribe_changes`]).
    registrations: AtomicU64,
    /// Tells subscribers of a new registration; made by the first
    /// subscriber, so a registry nobody watches (a generate call's child
    /// registry) builds and drops no channel.
    changes: std::sync::OnceLock<tokio::sync::watch::Sender<u64>>,
}

/// Raises a change count to `count` (counts only grow, whichever of two
/// concurrent registrations reports first); whether it changed.
fn raise(n: &mut u64, count: u64) -> bool {
    if *n < count {
        *n = count;
        true
    } else {
        false
    }
}

/// What [`Registry::lookup_registered`] found.
enum Registered<'a> {
    /// The action registered under the key.
    Found(DynAction),
    /// Registered nowhere, and nothing could resolve it.
    Missing,
    /// This registry may resolve the key (a plugin or a dynamic provider).
    Resolve(&'a Registry),
}

/// A registry reference that does not keep it alive (actions point back to
/// the registry they are registered in with one, so neither leaks the other).
#[derive(Clone, Default)]
pub struct WeakRegistry(std::sync::Weak<Inner>);

impl WeakRegistry {
    /// The registry, if it still exists.
    pub fn upgrade(&self) -> Option<Registry> {
        self.0.upgrade().map(|inner| Registry { inner })
    }

    /// Whether this points to `registry` (no reference count is touched).
    pub fn points_to(&self, registry: &Registry) -> bool {
        std::ptr::eq(self.0.as_ptr(), Arc::as_ptr(&registry.inner))
    }
}

impl std::fmt::Debug for WeakRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakRegistry")
    }
}

/// Why an action name cannot be registered, if it cannot: empty, starting or
/// ending with `/`, holding an empty segment (`//`) or a control character.
fn invalid_name_reason(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("it is empty")
    } else if name.starts_with('/') || name.ends_with('/') {
        Some("it starts or ends with `/`")
    } else if name.contains("//") {
        Some("it has an empty `/` segment")
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("actions", &self.inner.actions.read().len())
            .field("plugins", &self.inner.plugins.read().len())
            .field("has_parent", &self.inner.parent.is_some())
            .finish()
    }
}

impl Registry {
    /// An empty root registry.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner::default()),
        }
    }

    /// A child registry: lookups fall through to `self`, registrations stay
    /// in the child. Used per generate call for dynamic tools.
    pub fn child(&self) -> Registry {
        Self {
            inner: Arc::new(Inner {
                parent: Some(self.clone()),
                ..Inner::default()
            }),
        }
    }

    /// The parent, for a child registry.
    pub fn parent(&self) -> Option<&Registry> {
        self.inner.parent.as_ref()
    }

    /// The root registry: `self` for a root, the last ancestor for a child.
    pub fn root(&self) -> &Registry {
        let mut cur = self;
        while let Some(parent) = cur.parent() {
            cur = parent;
        }
        cur
    }

    /// A reference that does not keep the registry alive.
    pub fn downgrade(&self) -> WeakRegistry {
        WeakRegistry(Arc::downgrade(&self.inner))
    }

    /// Whether `self` and `other` are the same registry.
    pub fn ptr_eq(&self, other: &Registry) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Registers an action under its key. A key already registered in this
    /// registry is an `ALREADY_EXISTS` error (a parent's key may be shadowed);
    /// an invalid name (empty, starting or ending with `/`, with an empty
    /// segment or a control character) is `INVALID_ARGUMENT`. The action
    /// learns its registry here (see [`ErasedAction::on_registered`]).
    ///
    /// [`ErasedAction::on_registered`]: crate::ErasedAction::on_registered
    pub fn register(&self, action: impl IntoDynAction) -> Result<DynAction> {
        let action = action.into_dyn();
        if let Some(reason) = invalid_name_reason(action.name()) {
            return Err(Error::invalid_argument(format!(
                "cannot register action `{}`: {reason}",
                action.key()
            )));
        }
        let key = action.key();
        let mut actions = self.inner.actions.write();
        if actions.contains_key(&key) {
            return Err(Error::new(
                StatusCode::AlreadyExists,
                format!("action `{key}` is already registered"),
            ));
        }
        actions.insert(key, action.clone());
        drop(actions);
        action.on_registered(self);
        let count = self.inner.registrations.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(changes) = self.inner.changes.get() {
            changes.send_if_modified(|n| raise(n, count));
        }
        Ok(action)
    }

    /// A receiver whose value grows each time an action is registered in
    /// this registry (not in its ancestors), for what must notice actions
    /// added later, such as an MCP server telling its clients that its tool
    /// list changed. Actions a plugin resolves on demand do not count.
    pub fn subscribe_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        let changes = self.inner.changes.get_or_init(|| {
            tokio::sync::watch::channel(self.inner.registrations.load(Ordering::SeqCst)).0
        });
        // A registration that saw no channel yet counted before this load.
        let count = self.inner.registrations.load(Ordering::SeqCst);
        changes.send_if_modified(|n| raise(n, count));
        changes.subscribe()
    }

    /// Registers a plugin (not initialised until needed), after running its
    /// [`on_register`](Plugin::on_register). A second plugin with the same
    /// name is an `ALREADY_EXISTS` error.
    pub fn register_plugin(&self, plugin: Arc<dyn Plugin>) -> Result<()> {
        let taken = |plugins: &[Arc<PluginSlot>]| {
            if plugins.iter().any(|p| p.plugin.name() == plugin.name()) {
                return Err(Error::new(
                    StatusCode::AlreadyExists,
                    format!("plugin `{}` is already registered", plugin.name()),
                ));
            }
            Ok(())
        };
        taken(&self.inner.plugins.read())?;
        // Outside the lock: the hook registers values and may look things up.
        plugin.on_register(self).map_err(|e| {
            Error::new(
                e.status(),
                format!("registering plugin `{}`: {}", plugin.name(), e.message()),
            )
        })?;
        let mut plugins = self.inner.plugins.write();
        taken(&plugins)?;
        plugins.push(Arc::new(PluginSlot {
            plugin,
            initialized: OnceCell::new(),
        }));
        Ok(())
    }

    /// Names of the plugins registered here and in the ancestors, in
    /// registration order (ancestors first).
    pub fn plugin_names(&self) -> Vec<String> {
        let mut names = match &self.inner.parent {
            Some(p) => p.plugin_names(),
            None => Vec::new(),
        };
        names.extend(
            self.inner
                .plugins
                .read()
                .iter()
                .map(|p| p.plugin.name().to_owned()),
        );
        names
    }

    fn plugin_slot(&self, name: &str) -> Option<Arc<PluginSlot>> {
        self.inner
            .plugins
            .read()
            .iter()
            .find(|p| p.plugin.name() == name)
            .cloned()
    }

    /// Initialises the plugin `name` of this registry if it has not been yet.
    /// Concurrent callers wait for the one initialisation.
    pub async fn initialize_plugin(&self, name: &str) -> Result<()> {
        let Some(slot) = self.plugin_slot(name) else {
            return Ok(());
        };
        self.init_slot(&slot).await
    }

    async fn init_slot(&self, slot: &PluginSlot) -> Result<()> {
        slot.initialized
            .get_or_try_init(|| {
                // Plugin initialisation is not part of whichever action
                // happened to trigger it: run it outside the caller's trace.
                Frame::default().scope(async {
                    let name = slot.plugin.name().to_owned();
                    let actions = slot.plugin.init(self).await.map_err(|e| {
                        Error::new(
                            e.status(),
                            format!("initialising plugin `{name}`: {}", e.message()),
                        )
                    })?;
                    for action in actions {
                        self.register_plugin_action(&name, action)?;
                    }
                    Ok::<(), Error>(())
                })
            })
            .await
            .map(|_| ())
    }

    fn register_plugin_action(&self, plugin: &str, action: DynAction) -> Result<DynAction> {
        let prefix_ok = action
            .name()
            .strip_prefix(plugin)
            .is_some_and(|rest| rest.starts_with('/'));
        if !prefix_ok {
            return Err(Error::invalid_argument(format!(
                "plugin `{plugin}` returned action `{}` whose name does not start with `{plugin}/`",
                action.key()
            )));
        }
        self.register(action)
    }

    /// Initialises every plugin of this registry and its ancestors.
    pub async fn initialize_all_plugins(&self) -> Result<()> {
        if let Some(parent) = &self.inner.parent {
            Box::pin(parent.initialize_all_plugins()).await?;
        }
        let slots: Vec<_> = self.inner.plugins.read().clone();
        for slot in slots {
            self.init_slot(&slot).await?;
        }
        Ok(())
    }

    /// Looks up an action by key, initialising its plugin or resolving it on
    /// demand if needed, then falling back to the parent.
    ///
    /// An action already registered in this registry or an ancestor (the
    /// common case: a flow, model or tool looked up per call) is found
    /// without allocating; only a key that a dynamic action provider or a
    /// plugin may resolve takes the (boxed, recursive) resolving path.
    pub fn lookup_action<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Future<Output = Result<Option<DynAction>>> + Send + 'a {
        let found = self.lookup_registered(key);
        async move {
            match found {
                Registered::Found(action) => Ok(Some(action)),
                Registered::Missing => Ok(None),
                Registered::Resolve(registry) => registry.lookup_resolving(key).await,
            }
        }
    }

    /// The registered part of [`lookup_action`](Self::lookup_action): walks
    /// up the registries while the key can only be in their maps (no plugin
    /// in the registry that could resolve it, not a dynamic provider's key),
    /// so the answer is the same as the resolving path's.
    fn lookup_registered(&self, key: &str) -> Registered<'_> {
        let dynamic = key.starts_with(crate::dynamic::DAP_PREFIX);
        let mut registry = self;
        loop {
            if let Some(a) = registry.inner.actions.read().get(key) {
                return Registered::Found(a.clone());
            }
            if dynamic || !registry.inner.plugins.read().is_empty() {
                return Registered::Resolve(registry);
            }
            match &registry.inner.parent {
                Some(parent) => registry = parent,
                None => return Registered::Missing,
            }
        }
    }

    /// [`lookup_action`](Self::lookup_action) in full: the registry's map,
    /// then a dynamic provider's or a plugin's resolution, then the parent.
    fn lookup_resolving<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<DynAction>>> {
        Box::pin(async move {
            if let Some(a) = self.inner.actions.read().get(key) {
                return Ok(Some(a.clone()));
            }
            if let Some(dynamic) = DynamicKey::parse(key) {
                if dynamic.is_pattern() {
                    return Ok(None);
                }
                return Ok(self.dynamic_actions(&dynamic).await?.into_iter().next());
            }
            if let Some(parsed) = ActionKey::parse(key)
                && let Some(plugin) = &parsed.plugin
                && let Some(slot) = self.plugin_slot(plugin)
            {
                self.init_slot(&slot).await?;
                if let Some(a) = self.inner.actions.read().get(key) {
                    return Ok(Some(a.clone()));
                }
                let short = &parsed.name[plugin.len() + 1..];
                let resolved = Frame::default()
                    .scope(slot.plugin.resolve(self, parsed.kind, short))
                    .await?;
                if let Some(action) = resolved {
                    if action.key() != key {
                        return Err(Error::internal(format!(
                            "plugin `{plugin}` resolved `{key}` to a different action `{}`",
                            action.key()
                        )));
                    }
                    // Two concurrent lookups may both resolve: keep the first.
                    let mut actions = self.inner.actions.write();
                    let entry = actions.entry(key.to_owned()).or_insert(action);
                    return Ok(Some(entry.clone()));
                }
            }
            match &self.inner.parent {
                Some(parent) => parent.lookup_action(key).await,
                None => Ok(None),
            }
        })
    }

    /// Registers a [`DynamicActionProvider`] as the action
    /// `/dynamic-action-provider/<name>` (which, run, lists the descriptions
    /// of what the provider offers now). Its actions are then found on
    /// demand under `/dynamic-action-provider/<name>:<kind>/<action>`, by
    /// [`lookup_action`](Self::lookup_action) (one action) and
    /// [`resolve_actions`](Self::resolve_actions) (patterns), and listed by
    /// [`list_resolvable_actions`](Self::list_resolvable_actions). A name
    /// with `:` or `/` is `INVALID_ARGUMENT`; a name taken `ALREADY_EXISTS`.
    pub fn register_dynamic_action_provider(
        &self,
        name: &str,
        provider: Arc<dyn DynamicActionProvider>,
    ) -> Result<DynAction> {
        if name.contains([':', '/']) {
            return Err(Error::invalid_argument(format!(
                "dynamic action provider name `{name}` must not contain `:` or `/`"
            )));
        }
        let listing = provider.clone();
        let host = name.to_owned();
        let desc = ActionDesc::new(ActionKind::DynamicActionProvider, name)
            .with_metadata("type", Value::from("dynamic-action-provider"));
        let action = Action::<Value, Value>::from_desc(desc, move |_input, _ctx| {
            let provider = listing.clone();
            let host = host.clone();
            async move {
                let listed = provider.list().await?;
                let descriptors = listed.iter().map(|(kind, action)| {
                    let mut d = action.desc().to_descriptor();
                    // As in Genkit JS, a dynamic action is listed by the key
                    // it is found under.
                    d["key"] = Value::from(DynamicKey::format(&host, *kind, action.name()));
                    d
                });
                Ok(Value::Array(descriptors.collect()))
            }
        })?;
        let action = self.register(action.to_dyn())?;
        self.register_object(DYNAMIC_PROVIDERS, name, Arc::new(ProviderSlot(provider)));
        Ok(action)
    }

    fn dynamic_provider(&self, host: &str) -> Option<Arc<dyn DynamicActionProvider>> {
        self.lookup_object::<ProviderSlot>(DYNAMIC_PROVIDERS, host)
            .map(|slot| slot.0.clone())
    }

    /// The actions of the provider `key.host` that `key` matches (none if
    /// there is no such provider).
    async fn dynamic_actions(&self, key: &DynamicKey) -> Result<Vec<DynAction>> {
        let Some(provider) = self.dynamic_provider(&key.host) else {
            return Ok(Vec::new());
        };
        Ok(provider
            .list()
            .await?
            .into_iter()
            .filter(|(kind, action)| *kind == key.kind && key.matches(action.name()))
            .map(|(_, action)| action)
            .collect())
    }

    /// The actions a key names: for a dynamic key
    /// (`/dynamic-action-provider/<host>:<kind>/<pattern>`) every action of
    /// the provider that matches (`*`, `prefix*` or one name), otherwise the
    /// one action [`lookup_action`](Self::lookup_action) finds, if any.
    /// Genkit JS's `resolveActionNames`, returning the actions.
    pub async fn resolve_actions(&self, key: &str) -> Result<Vec<DynAction>> {
        match DynamicKey::parse(key) {
            Some(dynamic) => self.dynamic_actions(&dynamic).await,
            None => Ok(self.lookup_action(key).await?.into_iter().collect()),
        }
    }

    /// Looks up `/kind/name`.
    pub async fn lookup(&self, kind: ActionKind, name: &str) -> Result<Option<DynAction>> {
        self.lookup_action(&ActionKey::format(kind, name)).await
    }

    /// Like [`lookup_action`](Self::lookup_action) but a missing action is a
    /// `NOT_FOUND` error.
    pub async fn require_action(&self, key: &str) -> Result<DynAction> {
        self.lookup_action(key)
            .await?
            .ok_or_else(|| Error::not_found(format!("action `{key}` not found")))
    }

    /// Every registered action (this registry over its ancestors), after
    /// initialising all plugins, by key.
    pub async fn list_actions(&self) -> Result<BTreeMap<String, DynAction>> {
        self.initialize_all_plugins().await?;
        Ok(self.registered_actions())
    }

    /// Actions registered so far, without initialising anything.
    pub fn registered_actions(&self) -> BTreeMap<String, DynAction> {
        let mut out = match &self.inner.parent {
            Some(p) => p.registered_actions(),
            None => BTreeMap::new(),
        };
        for (k, a) in self.inner.actions.read().iter() {
            out.insert(k.clone(), a.clone());
        }
        out
    }

    /// Descriptions of every action that is registered or that a plugin says
    /// it can provide, without initialising any plugin. A plugin whose listing
    /// fails is skipped (and logged).
    pub async fn list_resolvable_actions(&self) -> BTreeMap<String, ActionDesc> {
        let mut out = match &self.inner.parent {
            Some(p) => Box::pin(p.list_resolvable_actions()).await,
            None => BTreeMap::new(),
        };
        let slots: Vec<_> = self.inner.plugins.read().clone();
        for slot in slots {
            match slot.plugin.list_actions().await {
                Ok(descs) => {
                    for d in descs {
                        out.insert(d.key(), d);
                    }
                }
                Err(e) => {
                    ::tracing::warn!(plugin = slot.plugin.name(), "listing actions failed: {e}")
                }
            }
        }
        for (k, a) in self.inner.actions.read().iter() {
            out.insert(k.clone(), a.desc().clone());
        }
        let hosts: Vec<String> = self
            .inner
            .objects
            .read()
            .keys()
            .filter(|(kind, _)| kind == DYNAMIC_PROVIDERS)
            .map(|(_, name)| name.clone())
            .collect();
        for host in hosts {
            let Some(provider) = self.dynamic_provider(&host) else {
                continue;
            };
            match provider.list().await {
                Ok(actions) => {
                    for (kind, action) in actions {
                        out.insert(
                            DynamicKey::format(&host, kind, action.name()),
                            action.desc().clone(),
                        );
                    }
                }
                Err(e) => ::tracing::warn!(provider = host, "listing dynamic actions failed: {e}"),
            }
        }
        out
    }

    /// Stores a named value of a type, e.g. (`defaultModel`, `defaultModel`).
    pub fn register_value(&self, kind: &str, name: &str, value: Value) {
        self.inner
            .values
            .write()
            .entry(kind.to_owned())
            .or_default()
            .insert(name.to_owned(), value);
    }

    /// A named value, from this registry or an ancestor.
    pub fn lookup_value(&self, kind: &str, name: &str) -> Option<Value> {
        if let Some(v) = self.inner.values.read().get(kind).and_then(|m| m.get(name)) {
            return Some(v.clone());
        }
        self.inner.parent.as_ref()?.lookup_value(kind, name)
    }

    /// All values of a type, ancestors first, overridden by this registry.
    pub fn list_values(&self, kind: &str) -> BTreeMap<String, Value> {
        let mut out = match &self.inner.parent {
            Some(p) => p.list_values(kind),
            None => BTreeMap::new(),
        };
        if let Some(m) = self.inner.values.read().get(kind) {
            for (k, v) in m {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    }

    /// Stores a named Rust object of a kind (e.g. a middleware factory or an
    /// output format) for in-process lookup; replaces an earlier one.
    pub fn register_object<T: Any + Send + Sync>(&self, kind: &str, name: &str, object: Arc<T>) {
        self.inner
            .objects
            .write()
            .insert((kind.to_owned(), name.to_owned()), object);
    }

    /// A named object of type `T`, from this registry or an ancestor.
    pub fn lookup_object<T: Any + Send + Sync>(&self, kind: &str, name: &str) -> Option<Arc<T>> {
        let found = self
            .inner
            .objects
            .read()
            .get(&(kind.to_owned(), name.to_owned()))
            .cloned();
        match found {
            Some(obj) => obj.downcast::<T>().ok(),
            None => self.inner.parent.as_ref()?.lookup_object(kind, name),
        }
    }

    /// Names of objects of a kind, from this registry and its ancestors.
    pub fn object_names(&self, kind: &str) -> Vec<String> {
        let mut names = match &self.inner.parent {
            Some(p) => p.object_names(kind),
            None => Vec::new(),
        };
        for (k, n) in self.inner.objects.read().keys() {
            if k == kind && !names.contains(n) {
                names.push(n.clone());
            }
        }
        names
    }

    /// Registers a named JSON schema (used by prompts' frontmatter). A name
    /// already used is an `ALREADY_EXISTS` error.
    pub fn register_schema(&self, name: &str, schema: Value) -> Result<()> {
        let mut schemas = self.inner.schemas.write();
        if schemas.contains_key(name) {
            return Err(Error::new(
                StatusCode::AlreadyExists,
                format!("schema `{name}` is already registered"),
            ));
        }
        schemas.insert(name.to_owned(), schema);
        Ok(())
    }

    /// A named schema, from this registry or an ancestor.
    pub fn lookup_schema(&self, name: &str) -> Option<Value> {
        if let Some(s) = self.inner.schemas.read().get(name) {
            return Some(s.clone());
        }
        self.inner.parent.as_ref()?.lookup_schema(name)
    }
}
