//! Registry behaviour: keys, duplicates, lazy plugins, resolution, child overlays.

use async_trait::async_trait;
use genkit_core::{
    Action, ActionDesc, ActionKind, DynAction, Plugin, Registry, Result, RunOptions, StatusCode,
    flow::define_flow,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn echo_model(name: &str) -> DynAction {
    Action::<Value, Value>::from_desc(
        ActionDesc::new(ActionKind::Model, name),
        |v, _| async move { Ok(v) },
    )
    .unwrap()
    .to_dyn()
}

struct CountingPlugin {
    inits: AtomicUsize,
    resolves: AtomicUsize,
}

impl CountingPlugin {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            inits: AtomicUsize::new(0),
            resolves: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl Plugin for CountingPlugin {
    fn name(&self) -> &str {
        "acme"
    }

    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        self.inits.fetch_add(1, Ordering::SeqCst);
        // Make the race window wide: concurrent lookups arrive while we sleep.
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(vec![echo_model("acme/known")])
    }

    async fn resolve(
        &self,
        _r: &Registry,
        kind: ActionKind,
        name: &str,
    ) -> Result<Option<DynAction>> {
        self.resolves.fetch_add(1, Ordering::SeqCst);
        if kind == ActionKind::Model && name.starts_with("dyn-") {
            return Ok(Some(echo_model(&format!("acme/{name}"))));
        }
        Ok(None)
    }

    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        Ok(vec![
            ActionDesc::new(ActionKind::Model, "acme/known"),
            ActionDesc::new(ActionKind::Model, "acme/dyn-listed"),
        ])
    }
}

#[tokio::test]
async fn duplicate_registration_is_an_error() {
    let reg = Registry::new();
    define_flow(&reg, "f", |s: String, _| async move { Ok(s) }).unwrap();
    let err = define_flow(&reg, "f", |s: String, _| async move { Ok(s) }).unwrap_err();
    assert_eq!(err.status(), StatusCode::AlreadyExists);
    assert!(err.message().contains("/flow/f"));
    // Same name, different kind: a different key, allowed.
    reg.register(echo_model("f")).unwrap();
}

#[tokio::test]
async fn unknown_keys_are_not_found() {
    let reg = Registry::new();
    assert!(reg.lookup_action("/flow/nope").await.unwrap().is_none());
    assert!(reg.lookup_action("garbage").await.unwrap().is_none());
    let err = reg.require_action("/flow/nope").await.err().unwrap();
    assert_eq!(err.status(), StatusCode::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_lazy_plugin_init_runs_once() {
    let reg = Registry::new();
    let plugin = CountingPlugin::new();
    reg.register_plugin(plugin.clone()).unwrap();
    assert_eq!(
        plugin.inits.load(Ordering::SeqCst),
        0,
        "registration must not initialise"
    );

    let mut handles = Vec::new();
    for _ in 0..32 {
        let reg = reg.clone();
        handles.push(tokio::spawn(async move {
            reg.lookup_action("/model/acme/known")
                .await
                .unwrap()
                .is_some()
        }));
    }
    for h in handles {
        assert!(h.await.unwrap());
    }
    assert_eq!(plugin.inits.load(Ordering::SeqCst), 1);
    reg.list_actions().await.unwrap();
    assert_eq!(plugin.inits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn plugin_actions_resolve_on_demand_and_are_cached() {
    let reg = Registry::new();
    let plugin = CountingPlugin::new();
    reg.register_plugin(plugin.clone()).unwrap();
    let a = reg
        .lookup_action("/model/acme/dyn-x")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.key(), "/model/acme/dyn-x");
    let out = a
        .run_json(json!("hi"), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(out.output, json!("hi"));
    reg.lookup_action("/model/acme/dyn-x")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(plugin.resolves.load(Ordering::SeqCst), 1);
    assert!(
        reg.lookup_action("/model/acme/missing")
            .await
            .unwrap()
            .is_none()
    );
    // Keys of other namespaces never touch the plugin.
    let before = plugin.resolves.load(Ordering::SeqCst);
    assert!(reg.lookup_action("/model/other/x").await.unwrap().is_none());
    assert_eq!(plugin.resolves.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn listing_resolvable_actions_does_not_initialise() {
    let reg = Registry::new();
    let plugin = CountingPlugin::new();
    reg.register_plugin(plugin.clone()).unwrap();
    define_flow(&reg, "f", |s: String, _| async move { Ok(s) }).unwrap();
    let listed = reg.list_resolvable_actions().await;
    assert!(listed.contains_key("/model/acme/known"));
    assert!(listed.contains_key("/model/acme/dyn-listed"));
    assert!(listed.contains_key("/flow/f"));
    assert_eq!(plugin.inits.load(Ordering::SeqCst), 0);

    let all = reg.list_actions().await.unwrap();
    assert_eq!(plugin.inits.load(Ordering::SeqCst), 1);
    assert!(all.contains_key("/model/acme/known"));
}

#[tokio::test]
async fn duplicate_plugins_are_rejected() {
    let reg = Registry::new();
    reg.register_plugin(CountingPlugin::new()).unwrap();
    let err = reg.register_plugin(CountingPlugin::new()).unwrap_err();
    assert_eq!(err.status(), StatusCode::AlreadyExists);
}

struct BadPlugin;

#[async_trait]
impl Plugin for BadPlugin {
    fn name(&self) -> &str {
        "bad"
    }
    async fn init(&self, _r: &Registry) -> Result<Vec<DynAction>> {
        Ok(vec![echo_model("notbad/x")])
    }
}

/// Registers a value at once when added; refuses when `fail` is set.
struct EagerPlugin {
    fail: bool,
    inits: AtomicUsize,
}

#[async_trait]
impl Plugin for EagerPlugin {
    fn name(&self) -> &str {
        "eager"
    }
    async fn init(&self, _r: &Registry) -> Result<Vec<DynAction>> {
        self.inits.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::new())
    }
    fn on_register(&self, registry: &Registry) -> Result<()> {
        if self.fail {
            return Err(genkit_core::Error::invalid_argument("no thanks"));
        }
        registry.register_value("middleware", "eager", json!({"name": "eager"}));
        Ok(())
    }
}

#[tokio::test]
async fn on_register_runs_at_once_and_its_error_keeps_the_plugin_out() {
    let reg = Registry::new();
    let plugin = Arc::new(EagerPlugin {
        fail: false,
        inits: AtomicUsize::new(0),
    });
    reg.register_plugin(plugin.clone()).unwrap();
    // Listed before anything initialised the plugin.
    assert_eq!(
        reg.list_values("middleware")["eager"],
        json!({"name": "eager"})
    );
    assert_eq!(plugin.inits.load(Ordering::SeqCst), 0);

    let reg = Registry::new();
    let err = reg
        .register_plugin(Arc::new(EagerPlugin {
            fail: true,
            inits: AtomicUsize::new(0),
        }))
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert_eq!(err.message(), "registering plugin `eager`: no thanks");
    assert!(reg.plugin_names().is_empty());
}

#[tokio::test]
async fn plugin_actions_must_use_the_namespace() {
    let reg = Registry::new();
    reg.register_plugin(Arc::new(BadPlugin)).unwrap();
    let err = reg.lookup_action("/model/bad/x").await.unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("bad/"), "{}", err.message());
}

#[tokio::test]
async fn child_registries_overlay_their_parent() {
    let parent = Registry::new();
    define_flow(&parent, "shared", |s: String, _| async move { Ok(s) }).unwrap();
    parent.register_value("defaultModel", "defaultModel", json!("m1"));

    let child = parent.child();
    child.register(echo_model("local")).unwrap();
    // Lookups fall through.
    assert!(child.lookup_action("/flow/shared").await.unwrap().is_some());
    assert_eq!(
        child.lookup_value("defaultModel", "defaultModel"),
        Some(json!("m1"))
    );
    // Registrations stay in the child.
    assert!(child.lookup_action("/model/local").await.unwrap().is_some());
    assert!(
        parent
            .lookup_action("/model/local")
            .await
            .unwrap()
            .is_none()
    );
    // The child may shadow a parent key without touching the parent.
    child.register(echo_model("shadowed")).unwrap();
    parent.register(echo_model("shadowed")).unwrap();
    // Listing merges, child over parent.
    let keys: Vec<_> = child.list_actions().await.unwrap().into_keys().collect();
    assert!(keys.contains(&"/flow/shared".to_string()));
    assert!(keys.contains(&"/model/local".to_string()));
    let parent_keys: Vec<_> = parent.list_actions().await.unwrap().into_keys().collect();
    assert!(!parent_keys.contains(&"/model/local".to_string()));
    // Values set in the child stay in the child.
    child.register_value("defaultModel", "defaultModel", json!("m2"));
    assert_eq!(
        parent.lookup_value("defaultModel", "defaultModel"),
        Some(json!("m1"))
    );
    assert_eq!(
        child.lookup_value("defaultModel", "defaultModel"),
        Some(json!("m2"))
    );
}

#[tokio::test]
async fn child_uses_parent_plugins() {
    let parent = Registry::new();
    let plugin = CountingPlugin::new();
    parent.register_plugin(plugin.clone()).unwrap();
    let child = parent.child();
    assert!(
        child
            .lookup_action("/model/acme/known")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(plugin.inits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn named_schemas() {
    let reg = Registry::new();
    reg.register_schema("Person", json!({"type": "object"}))
        .unwrap();
    assert_eq!(
        reg.register_schema("Person", json!({}))
            .unwrap_err()
            .status(),
        StatusCode::AlreadyExists
    );
    assert_eq!(
        reg.child().lookup_schema("Person"),
        Some(json!({"type": "object"}))
    );
    assert_eq!(reg.lookup_schema("Nope"), None);
}

#[tokio::test]
async fn change_subscribers_see_every_registration_count() {
    let reg = Registry::new();
    reg.register(echo_model("a")).unwrap();
    reg.register(echo_model("b")).unwrap();
    // Registrations made before anyone subscribed are counted.
    let mut changes = reg.subscribe_changes();
    assert_eq!(*changes.borrow_and_update(), 2);
    reg.register(echo_model("c")).unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.changed())
        .await
        .expect("notified")
        .unwrap();
    assert_eq!(*changes.borrow_and_update(), 3);
    // A second subscriber starts at the same count; a failed registration
    // and a child's registrations do not count.
    let second = reg.subscribe_changes();
    assert_eq!(*second.borrow(), 3);
    assert!(reg.register(echo_model("c")).is_err());
    reg.child().register(echo_model("d")).unwrap();
    assert!(!changes.has_changed().unwrap());
    assert_eq!(*second.borrow(), 3);
}

#[tokio::test]
async fn lookups_fall_through_several_child_levels() {
    let root = Registry::new();
    root.register(echo_model("deep")).unwrap();
    let grandchild = root.child().child();
    let found = grandchild.lookup_action("/model/deep").await.unwrap();
    assert!(found.is_some_and(|a| a.key() == "/model/deep"));
    assert!(
        grandchild
            .lookup_action("/model/missing")
            .await
            .unwrap()
            .is_none()
    );
}
