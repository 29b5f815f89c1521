//! The one action context: the registry and typed extensions reach every
//! body, nested runs inherit them, and registration refuses bad names.

use genkit_core::flow::define_flow;
use genkit_core::tracing::with_extension;
use genkit_core::{Action, ActionCtx, ActionKind, Registry, Result, RunOptions, StatusCode};

#[derive(Debug, Clone, PartialEq)]
struct Session {
    id: String,
}

#[tokio::test]
async fn a_registered_action_sees_its_registry() -> Result<()> {
    let registry = Registry::new();
    let flow = define_flow(&registry, "whoami", |_: (), ctx| async move {
        let r = ctx.require_registry()?;
        Ok(r.registered_actions().contains_key("/flow/whoami"))
    })?;
    assert!(flow.run(()).await?);
    Ok(())
}

#[tokio::test]
async fn an_unregistered_action_sees_its_callers_registry_or_an_error() -> Result<()> {
    let registry = Registry::new();
    let inner: Action<(), bool> = Action::new(ActionKind::Tool, "inner", |_: (), ctx| async move {
        Ok(ctx.registry().is_some())
    });
    // Run alone: no registry, and a clear error for those who need one.
    assert!(!inner.run(()).await?);
    let probe: Action<(), ()> = Action::new(ActionKind::Tool, "probe", |_: (), ctx| async move {
        ctx.require_registry().map(drop)
    });
    let err = probe.run(()).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);

    // Run from a registered flow: the flow's registry.
    let inner2 = inner.clone();
    let outer = define_flow(&registry, "outer", move |_: (), _ctx| {
        let inner = inner2.clone();
        async move { inner.run(()).await }
    })?;
    assert!(outer.run(()).await?);
    Ok(())
}

#[tokio::test]
async fn a_child_registration_binds_the_root() -> Result<()> {
    let root = Registry::new();
    let child = root.child();
    let action: Action<(), bool> = Action::new(ActionKind::Tool, "t", |_: (), ctx| async move {
        Ok(ctx.registry().is_some_and(|r| r.parent().is_none()))
    });
    child.register(&action)?;
    drop(child);
    assert!(action.run(()).await?, "the root outlives the child");
    Ok(())
}

#[tokio::test]
async fn extensions_reach_nested_runs() -> Result<()> {
    let registry = Registry::new();
    let leaf = define_flow(&registry, "leaf", |_: (), ctx| async move {
        Ok(ctx.extension::<Session>().map(|s| s.id.clone()))
    })?;
    let leaf2 = leaf.clone();
    let mid = define_flow(&registry, "mid", move |_: (), ctx: ActionCtx| {
        let leaf = leaf2.clone();
        async move {
            let seen_here = ctx.extension::<Session>().cloned();
            let seen_below = leaf.run(()).await?;
            Ok((seen_here.map(|s| s.id), seen_below))
        }
    })?;

    // Through run options.
    let session = Session { id: "s1".into() };
    let out = mid
        .run_with((), RunOptions::new().extension(session))
        .await?
        .output;
    assert_eq!(out, (Some("s1".into()), Some("s1".into())));

    // Through a scope, and overridden by run options for one run.
    let scoped = with_extension(Session { id: "outer".into() }, async {
        let plain = leaf.run(()).await?;
        let overridden = leaf
            .run_with(
                (),
                RunOptions::new().extension(Session { id: "inner".into() }),
            )
            .await?
            .output;
        Ok::<_, genkit_core::Error>((plain, overridden))
    })
    .await?;
    assert_eq!(scoped, (Some("outer".into()), Some("inner".into())));

    // Nothing leaks out of a run.
    assert_eq!(leaf.run(()).await?, None);
    Ok(())
}

#[tokio::test]
async fn bad_names_are_refused_with_invalid_argument() {
    let registry = Registry::new();
    for name in ["", "  ", "/lead", "trail/", "a//b", "bad\nname"] {
        let action: Action<(), ()> =
            Action::new(ActionKind::Flow, name, |_: (), _ctx| async { Ok(()) });
        let err = registry.register(&action).unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument, "{name:?}");
    }
    let ok: Action<(), ()> = Action::new(
        ActionKind::Model,
        "provider/model-1.5 pro",
        |_: (), _ctx| async { Ok(()) },
    );
    assert!(registry.register(&ok).is_ok());
}

#[tokio::test]
async fn a_context_built_inside_a_run_inherits_registry_and_extensions() -> Result<()> {
    let registry = Registry::new();
    let flow = define_flow(&registry, "adapter", |_: (), ctx| async move {
        let built: ActionCtx = ActionCtx::new(ctx.context.clone(), ctx.cancel.clone(), ctx.trace());
        Ok((
            built.registry().is_some(),
            built.extension::<Session>().map(|s| s.id.clone()),
            built.is_streaming(),
        ))
    })?;
    let out = flow
        .run_with((), RunOptions::new().extension(Session { id: "a".into() }))
        .await?
        .output;
    assert_eq!(out, (true, Some("a".into()), false));
    Ok(())
}
