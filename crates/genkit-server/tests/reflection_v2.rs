//! The Reflection API v2 client against a scripted WebSocket server that
//! plays the Genkit CLI's part (messages as genkit-cli 1.43 sends them):
//! register, listActions, listValues, runAction (plain, streaming, failing,
//! bidirectional with an input stream), cancelAction, an unknown method, and
//! reconnecting after the server drops the connection.

use futures::{SinkExt, StreamExt};
use genkit_core::action::{BidiAction, BidiInputs};
use genkit_core::flow::{define_flow, define_streaming_flow};
use genkit_core::{ActionCtx, ActionKind, Error, Registry, StatusCode};
use genkit_server::{DevToolingOptions, start_dev_tooling_with};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

type Ws = WebSocketStream<TcpStream>;

fn registry() -> Registry {
    let r = Registry::new();
    define_flow(&r, "hello", |name: String, _| async move {
        Ok(format!("Hello, {name}!"))
    })
    .unwrap();
    define_streaming_flow(&r, "count", |n: u32, ctx| async move {
        for i in 0..n {
            ctx.send_chunk(json!({ "i": i }));
        }
        Ok(n)
    })
    .unwrap();
    define_flow(&r, "fail", |_: Value, _| async move {
        Err::<Value, _>(Error::new(StatusCode::InvalidArgument, "bad thing"))
    })
    .unwrap();
    define_streaming_flow(&r, "forever", |_: Value, ctx| async move {
        ctx.send_chunk(json!("started"));
        ctx.cancel.cancelled().await;
        Ok(json!("unreachable: cancellation wins"))
    })
    .unwrap();
    BidiAction::<String, String, String, String>::define(
        &r,
        ActionKind::Flow,
        "chat",
        |prefix: String, mut inputs: BidiInputs<String>, ctx: ActionCtx<String>| async move {
            let mut turns = 0;
            while let Some(input) = inputs.recv().await {
                ctx.send_chunk(format!("{prefix}{}", input?));
                turns += 1;
            }
            Ok(format!("{turns} turns"))
        },
    )
    .unwrap();
    r
}

async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

async fn recv(ws: &mut Ws) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message from the runtime within 10 s")
            .expect("the connection is open")
            .unwrap();
        if let Message::Text(t) = frame {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

async fn request(ws: &mut Ws, id: &str, method: &str, params: Value) {
    send(
        ws,
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .await;
}

/// Accepts the runtime's connection and answers its `register`.
async fn accept(listener: &TcpListener) -> (Ws, Value) {
    let (tcp, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the runtime connects")
        .unwrap();
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    let register = recv(&mut ws).await;
    assert_eq!(register["method"], "register");
    send(
        &mut ws,
        json!({"jsonrpc": "2.0", "result": {"telemetryServerUrl": null}, "id": register["id"]}),
    )
    .await;
    (ws, register)
}

/// Collects `runAction` request `id`'s notifications until its answer.
async fn run_until_answer(ws: &mut Ws, id: &str) -> (Vec<Value>, Option<String>, Value) {
    let (mut chunks, mut trace) = (Vec::new(), None);
    loop {
        let m = recv(ws).await;
        match m["method"].as_str() {
            Some("streamChunk") => {
                assert_eq!(m["params"]["requestId"], id);
                chunks.push(m["params"]["chunk"].clone());
            }
            Some("runActionState") => {
                assert_eq!(m["params"]["requestId"], id);
                trace = m["params"]["state"]["traceId"].as_str().map(str::to_owned);
            }
            _ => {
                assert_eq!(m["id"], id, "{m}");
                return (chunks, trace, m);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_cli_over_websocket_and_reconnects() {
    let registry = registry();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let dev = start_dev_tooling_with(
        &registry,
        DevToolingOptions {
            name: Some("v2 app".into()),
            exit_on_signal: false,
            force: true,
            reflection_v2_server: Some(url.clone()),
            ..DevToolingOptions::default()
        },
    )
    .await
    .unwrap()
    .expect("forced dev tooling starts");
    assert_eq!(dev.url(), url);
    assert!(dev.runtime_file().is_none(), "v2 writes no runtime file");

    let (mut ws, register) = accept(&listener).await;
    let p = &register["params"];
    assert_eq!(p["id"], dev.runtime_id());
    assert_eq!(p["pid"], std::process::id());
    assert_eq!(p["name"], "v2 app");
    assert_eq!(p["reflectionApiSpecVersion"], 1);
    assert_eq!(p["envs"], json!(["dev"]));

    request(&mut ws, "1", "listActions", Value::Null).await;
    let m = recv(&mut ws).await;
    assert_eq!(m["id"], "1");
    let actions = &m["result"]["actions"];
    assert_eq!(actions["/flow/hello"]["key"], "/flow/hello");
    assert_eq!(actions["/flow/hello"]["name"], "hello");
    assert!(actions["/flow/chat"].is_object(), "{actions}");

    request(&mut ws, "2", "listValues", json!({"type": "defaultModel"})).await;
    let m = recv(&mut ws).await;
    assert_eq!(
        m,
        json!({"jsonrpc": "2.0", "result": {"values": {}}, "id": "2"})
    );
    request(&mut ws, "3", "listValues", json!({"type": "bogus"})).await;
    let m = recv(&mut ws).await;
    assert_eq!(m["error"]["code"], -32602);

    request(
        &mut ws,
        "4",
        "runAction",
        json!({"key": "/flow/hello", "input": "v2", "stream": false, "streamInput": false}),
    )
    .await;
    let (chunks, trace, m) = run_until_answer(&mut ws, "4").await;
    assert!(chunks.is_empty());
    let trace = trace.expect("runActionState names the trace");
    assert_eq!(m["result"]["result"], "Hello, v2!");
    assert_eq!(m["result"]["telemetry"]["traceId"], trace.as_str());

    request(
        &mut ws,
        "5",
        "runAction",
        json!({"key": "/flow/count", "input": 3, "stream": true}),
    )
    .await;
    let (chunks, _, m) = run_until_answer(&mut ws, "5").await;
    assert_eq!(
        chunks,
        vec![json!({"i": 0}), json!({"i": 1}), json!({"i": 2})]
    );
    assert_eq!(m["result"]["result"], 3);

    request(
        &mut ws,
        "6",
        "runAction",
        json!({"key": "/flow/fail", "input": null}),
    )
    .await;
    let (_, trace, m) = run_until_answer(&mut ws, "6").await;
    assert_eq!(m["error"]["code"], -32000);
    assert_eq!(m["error"]["message"], "bad thing");
    assert_eq!(m["error"]["data"]["code"], 3);
    assert_eq!(
        m["error"]["data"]["details"]["traceId"],
        trace.unwrap().as_str()
    );
    assert!(m["error"]["data"]["details"]["stack"].is_string());

    request(
        &mut ws,
        "7",
        "runAction",
        json!({"key": "/flow/nope", "input": null}),
    )
    .await;
    let m = recv(&mut ws).await;
    assert_eq!(m["error"]["code"], -32602);
    assert_eq!(m["error"]["message"], "action /flow/nope not found");

    // A bidirectional run whose input streams in after the request.
    request(
        &mut ws,
        "8",
        "runAction",
        json!({"key": "/flow/chat", "init": "> ", "stream": true, "streamInput": true}),
    )
    .await;
    for word in ["a", "b"] {
        send(
            &mut ws,
            json!({"jsonrpc": "2.0", "method": "sendInputStreamChunk", "params": {"requestId": "8", "chunk": word}}),
        )
        .await;
    }
    send(
        &mut ws,
        json!({"jsonrpc": "2.0", "method": "endInputStream", "params": {"requestId": "8"}}),
    )
    .await;
    let (chunks, _, m) = run_until_answer(&mut ws, "8").await;
    assert_eq!(chunks, vec![json!("> a"), json!("> b")]);
    assert_eq!(m["result"]["result"], "2 turns");

    // Cancelling a run in flight by its trace id.
    request(
        &mut ws,
        "9",
        "runAction",
        json!({"key": "/flow/forever", "input": null, "stream": true}),
    )
    .await;
    let mut trace = None;
    let mut started = false;
    while trace.is_none() || !started {
        let m = recv(&mut ws).await;
        match m["method"].as_str() {
            Some("runActionState") => {
                trace = m["params"]["state"]["traceId"].as_str().map(str::to_owned)
            }
            Some("streamChunk") => started = m["params"]["chunk"] == "started",
            _ => panic!("unexpected {m}"),
        }
    }
    let trace = trace.unwrap();
    request(&mut ws, "10", "cancelAction", json!({"traceId": trace})).await;
    let (mut cancelled, mut answered) = (false, false);
    while !(cancelled && answered) {
        let m = recv(&mut ws).await;
        if m["id"] == "10" {
            assert_eq!(m["result"], json!({"message": "Action cancelled"}));
            cancelled = true;
        } else {
            assert_eq!(m["id"], "9", "{m}");
            assert_eq!(m["error"]["data"]["code"], 1, "CANCELLED: {m}");
            answered = true;
        }
    }
    assert_eq!(dev.reflection().active_runs(), 0);
    request(&mut ws, "11", "cancelAction", json!({"traceId": trace})).await;
    let m = recv(&mut ws).await;
    assert_eq!(
        m["error"]["message"],
        "Action not found or already completed"
    );

    request(&mut ws, "12", "bogusMethod", json!({})).await;
    let m = recv(&mut ws).await;
    assert_eq!(m["error"]["code"], -32601);

    // The CLI goes away and comes back: the runtime registers again.
    ws.close(None).await.unwrap();
    drop(ws);
    let (mut ws, register) = accept(&listener).await;
    assert_eq!(register["params"]["id"], dev.runtime_id());
    request(
        &mut ws,
        "1",
        "runAction",
        json!({"key": "/flow/hello", "input": "again"}),
    )
    .await;
    let (_, _, m) = run_until_answer(&mut ws, "1").await;
    assert_eq!(m["result"]["result"], "Hello, again!");
    dev.shutdown().await;
}
