//! Middleware: generate-, model- and tool-level chains, middleware tools, and
//! each built-in.

use async_trait::async_trait;
use genkit_core::{DynAction, Error, Registry, Result, StatusCode};
use genkit_generate::{GenerateOptions, generate};
use genkit_middleware::{fallback, retry};
use genkit_model::middleware::{
    GenerateCallCtx, GenerateEnvelope, GenerateMiddleware, GenerateNext, ModelCallCtx, ModelNext,
    ToolCallCtx, ToolNext, augment_with_context, download_request_media, simulate_system_prompt,
    validate_support,
};
use genkit_model::model::{ModelOptions, define_model};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::{Tool, define_tool};
use genkit_model::types::{
    DocumentData, GenerateRequest, GenerateResponse, Message, ModelSupports, Part, PartKind, Role,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Records what each hook sees.
#[derive(Default)]
struct Recorder {
    log: Mutex<Vec<String>>,
}

#[async_trait]
impl GenerateMiddleware for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    async fn generate(
        &self,
        env: GenerateEnvelope,
        ctx: GenerateCallCtx,
        next: GenerateNext,
    ) -> Result<GenerateResponse> {
        self.log.lock().push(format!(
            "generate turn={} index={}",
            env.current_turn, env.message_index
        ));
        let out = next.run(env, ctx).await;
        self.log.lock().push("generate done".into());
        out
    }

    async fn model(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        self.log
            .lock()
            .push(format!("model messages={}", req.messages.len()));
        req.config = Some(json!({"injected": true}));
        next.run(req, ctx).await
    }

    async fn tool(&self, part: Part, ctx: ToolCallCtx, next: ToolNext) -> Result<Option<Part>> {
        let name = part
            .as_tool_request()
            .map(|r| r.name.clone())
            .unwrap_or_default();
        self.log.lock().push(format!("tool {name}"));
        next.run(part, ctx).await
    }

    fn tools(&self) -> Vec<DynAction> {
        vec![
            Tool::new("fromMiddleware", "contributed", |_: Value, _ctx| async {
                Ok(json!("mw tool"))
            })
            .to_dyn(),
        ]
    }
}

#[tokio::test]
async fn hooks_wrap_turns_model_calls_and_tools_and_contribute_tools() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("fromMiddleware", json!({}))
        .respond_text("ok");
    let rec = Arc::new(Recorder::default());
    let r = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("m")
            .use_middleware(rec.clone()),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "ok");
    assert_eq!(
        *rec.log.lock(),
        vec![
            "generate turn=0 index=0",
            "model messages=1",
            "tool fromMiddleware",
            "generate turn=1 index=1",
            "model messages=3",
            "generate done",
            "generate done",
        ]
    );
    // The model saw the middleware's tool and its config change.
    let reqs = model.requests();
    assert_eq!(reqs[0].tools()[0].name, "fromMiddleware");
    assert_eq!(reqs[0].config, Some(json!({"injected": true})));
    let out = reqs[1].messages[2].content[0]
        .as_tool_response()
        .unwrap()
        .output
        .clone();
    assert_eq!(out, Some(json!("mw tool")));
}

/// A generate middleware may also short-circuit a turn.
struct Canned;

#[async_trait]
impl GenerateMiddleware for Canned {
    async fn generate(
        &self,
        _env: GenerateEnvelope,
        _ctx: GenerateCallCtx,
        _next: GenerateNext,
    ) -> Result<GenerateResponse> {
        Ok(GenerateResponse::new(
            Message::model("cached"),
            genkit_model::types::FinishReason::Stop,
        ))
    }
}

#[tokio::test]
async fn generate_middleware_can_skip_the_model() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m");
    let r = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("m")
            .use_middleware(Canned),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "cached");
    assert_eq!(model.call_count(), 0);
}

#[tokio::test]
async fn model_level_middleware_runs_inside_the_model() {
    let reg = Registry::new();
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    define_model(
        &reg,
        ModelOptions::new("sys").use_middleware(simulate_system_prompt()),
        move |req: GenerateRequest, _ctx| {
            *s.lock() = Some(req.messages.clone());
            async {
                Ok(GenerateResponse::new(
                    Message::model("ok"),
                    genkit_model::types::FinishReason::Stop,
                ))
            }
        },
    )
    .unwrap();
    generate(
        &reg,
        GenerateOptions::prompt("hi").system("be nice").model("sys"),
    )
    .await
    .unwrap();
    let msgs = seen.lock().clone().unwrap();
    let roles: Vec<_> = msgs.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Model, Role::User]);
    assert_eq!(msgs[0].text(), "SYSTEM INSTRUCTIONS:\nbe nice");
    assert_eq!(msgs[1].text(), "Understood.");
}

#[tokio::test]
async fn retry_retries_retryable_statuses_with_backoff() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "flaky")
        .respond_error(Error::new(StatusCode::Unavailable, "down"))
        .respond_error(Error::new(StatusCode::ResourceExhausted, "429"))
        .respond_text("finally");
    let attempts = Arc::new(AtomicUsize::new(0));
    let a = attempts.clone();
    let started = std::time::Instant::now();
    let r = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("flaky")
            .use_model_middleware(
                retry()
                    .initial_delay(Duration::from_millis(20))
                    .jitter(false)
                    .on_error(move |_, n| {
                        a.store(n as usize, Ordering::SeqCst);
                    }),
            ),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "finally");
    assert_eq!(model.call_count(), 3);
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    // 20 ms then 40 ms of backoff.
    assert!(started.elapsed() >= Duration::from_millis(60));
}

#[tokio::test]
async fn retry_gives_up_on_other_statuses_and_after_max_retries() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "bad")
        .respond_error(Error::new(StatusCode::InvalidArgument, "bad request"))
        .respond_error(Error::new(StatusCode::Unavailable, "1"))
        .respond_error(Error::new(StatusCode::Unavailable, "2"))
        .respond_error(Error::new(StatusCode::Unavailable, "3"));
    let mw = || {
        retry()
            .initial_delay(Duration::from_millis(1))
            .max_retries(2)
    };
    let err = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("bad")
            .use_model_middleware(mw()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert_eq!(model.call_count(), 1);
    let err = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("bad")
            .use_model_middleware(mw()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.message(), "3");
    assert_eq!(model.call_count(), 4);
}

#[tokio::test]
async fn fallback_tries_the_next_model() {
    let reg = Registry::new();
    let primary = ProgrammableModel::define(&reg, "primary")
        .respond_error(Error::new(StatusCode::Unavailable, "down"));
    let secondary = ProgrammableModel::define(&reg, "secondary").respond_text("from secondary");
    let r = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("primary")
            .use_model_middleware(fallback(&reg, ["secondary"])),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "from secondary");
    assert_eq!((primary.call_count(), secondary.call_count()), (1, 1));
    // A non-fallback status is returned as is.
    let primary = primary.respond_error(Error::new(StatusCode::PermissionDenied, "no"));
    let err = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("primary")
            .use_model_middleware(fallback(&reg, ["secondary"])),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::PermissionDenied);
    assert_eq!(primary.call_count(), 2);
}

#[tokio::test]
async fn augment_with_context_renders_documents() {
    let reg = Registry::new();
    let seen = Arc::new(Mutex::new(String::new()));
    let s = seen.clone();
    define_model(
        &reg,
        ModelOptions::new("ctx")
            .supports(ModelSupports {
                context: Some(true),
                ..Default::default()
            })
            .use_middleware(augment_with_context().citation_key(Some("source".into()))),
        move |req: GenerateRequest, _ctx| {
            *s.lock() = req.messages.last().map(|m| m.text()).unwrap_or_default();
            async {
                Ok(GenerateResponse::new(
                    Message::model("ok"),
                    genkit_model::types::FinishReason::Stop,
                ))
            }
        },
    )
    .unwrap();
    let mut d1 = DocumentData::from_text("Paris is in France.");
    d1.metadata = Some(serde_json::Map::from_iter([(
        "source".into(),
        json!("wiki"),
    )]));
    generate(
        &reg,
        GenerateOptions::prompt("where is Paris?")
            .model("ctx")
            .docs([d1]),
    )
    .await
    .unwrap();
    assert_eq!(
        *seen.lock(),
        "where is Paris?\n\nUse the following information to complete your task:\n\n- [wiki]: Paris is in France.\n\n"
    );
}

#[tokio::test]
async fn validate_support_rejects_what_the_model_cannot_do() {
    let reg = Registry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let supports = ModelSupports {
        media: Some(false),
        tools: Some(false),
        multiturn: Some(false),
        ..Default::default()
    };
    define_model(
        &reg,
        ModelOptions::new("limited")
            .supports(supports.clone())
            .use_middleware(validate_support("limited", supports)),
        move |_req: GenerateRequest, _ctx| {
            c.fetch_add(1, Ordering::SeqCst);
            async {
                Ok(GenerateResponse::new(
                    Message::model("ok"),
                    genkit_model::types::FinishReason::Stop,
                ))
            }
        },
    )
    .unwrap();
    let media = GenerateOptions::prompt(vec![
        Part::text("see"),
        Part::media("https://x/y.png", Some("image/png")),
    ])
    .model("limited");
    let err = generate(&reg, media).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("media"));
    let multi =
        GenerateOptions::messages([Message::user("a"), Message::model("b"), Message::user("c")])
            .model("limited");
    assert!(
        generate(&reg, multi)
            .await
            .unwrap_err()
            .message()
            .contains("multiple messages")
    );
    let t = define_tool(&reg, "t", "t", |_: Value, _ctx| async { Ok(json!(1)) }).unwrap();
    let tools = GenerateOptions::prompt("x").model("limited").tool(&t);
    assert!(
        generate(&reg, tools)
            .await
            .unwrap_err()
            .message()
            .contains("tool use")
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    generate(&reg, GenerateOptions::prompt("fine").model("limited"))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn download_media_inlines_http_urls() {
    let reg = Registry::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let fetched = Arc::new(Mutex::new(Vec::new()));
    let f = fetched.clone();
    let fetcher: genkit_model::middleware::MediaFetcher = Arc::new(move |url: String, _max| {
        f.lock().push(url);
        Box::pin(async { Ok((b"PNG".to_vec(), Some("image/png".to_owned()))) })
    });
    define_model(
        &reg,
        ModelOptions::new("vision").use_middleware(download_request_media(fetcher)),
        move |req: GenerateRequest, _ctx| {
            *s.lock() = req.messages[0].content.clone();
            async {
                Ok(GenerateResponse::new(
                    Message::model("ok"),
                    genkit_model::types::FinishReason::Stop,
                ))
            }
        },
    )
    .unwrap();
    let prompt = vec![
        Part::media("https://example.test/cat.png", None),
        Part::media("data:image/png;base64,AAAA", None),
    ];
    generate(&reg, GenerateOptions::prompt(prompt).model("vision"))
        .await
        .unwrap();
    assert_eq!(
        *fetched.lock(),
        vec!["https://example.test/cat.png".to_owned()]
    );
    let parts = seen.lock().clone();
    match &parts[0].kind {
        PartKind::Media(m) => {
            assert_eq!(m.url, "data:image/png;base64,UE5H");
            assert_eq!(m.content_type.as_deref(), Some("image/png"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&parts[1].kind, PartKind::Media(m) if m.url == "data:image/png;base64,AAAA"));
}

#[tokio::test]
async fn named_middleware_resolves_for_serialized_requests() {
    use genkit_generate::define_generate_action;
    use genkit_model::middleware::define_middleware;
    use genkit_model::types::{GenerateActionOptions, MiddlewareRef};
    let reg = Registry::new();
    define_generate_action(&reg).unwrap();
    ProgrammableModel::define(&reg, "m").respond_text("ok");
    let rec = Arc::new(Recorder::default());
    let r2 = rec.clone();
    define_middleware(&reg, "recorder", "records", move |_config| {
        Ok(r2.clone() as Arc<dyn GenerateMiddleware>)
    });
    let mut opts = GenerateActionOptions::new(vec![Message::user("hi")]).with_model("m");
    opts.middleware = Some(vec![MiddlewareRef {
        name: "recorder".into(),
        config: None,
    }]);
    let action = reg.require_action("/util/generate").await.unwrap();
    action
        .run_json(serde_json::to_value(&opts).unwrap(), Default::default())
        .await
        .unwrap();
    assert!(rec.log.lock().iter().any(|l| l.starts_with("model")));
    opts.middleware = Some(vec![MiddlewareRef {
        name: "nope".into(),
        config: None,
    }]);
    let err = action
        .run_json(serde_json::to_value(&opts).unwrap(), Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(reg.list_values("middleware").len(), 1);
}

/// The HTTP fetcher against a real (local) HTTP server, which needs the
/// opt-in for private addresses.
#[tokio::test]
async fn download_media_over_http() {
    use genkit_model::middleware::HttpMediaFetch;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..2 {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let n = sock.read(&mut buf).await.unwrap();
            let req = String::from_utf8_lossy(&buf[..n]).to_string();
            let resp = if req.starts_with("GET /cat.png") {
                "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 3\r\nconnection: close\r\n\r\nPNG".to_owned()
            } else {
                "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\nconnection: close\r\n\r\ngone"
                    .to_owned()
            };
            sock.write_all(resp.as_bytes()).await.unwrap();
        }
    });
    let reg = Registry::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    define_model(
        &reg,
        ModelOptions::new("vision")
            .use_middleware(HttpMediaFetch::new().allow_private_addresses().middleware()),
        move |req: GenerateRequest, _ctx| {
            *s.lock() = req.messages[0].content.clone();
            async {
                Ok(GenerateResponse::new(
                    Message::model("ok"),
                    genkit_model::types::FinishReason::Stop,
                ))
            }
        },
    )
    .unwrap();
    let ok = GenerateOptions::prompt(vec![Part::media(format!("http://{addr}/cat.png"), None)])
        .model("vision");
    generate(&reg, ok).await.unwrap();
    assert!(
        matches!(&seen.lock()[0].kind, PartKind::Media(m) if m.url == "data:image/png;base64,UE5H")
    );
    let missing =
        GenerateOptions::prompt(vec![Part::media(format!("http://{addr}/nope.png"), None)])
            .model("vision");
    let err = generate(&reg, missing).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert!(err.message().contains("gone"), "{err}");
}
