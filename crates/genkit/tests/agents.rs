//! Agents through the facade: prompt-backed and custom agents, the chat
//! client, the session in tool contexts, descriptors, and bad input.

use std::sync::Arc;

use genkit::agent::store::{InMemorySessionStore, SessionStore};
use genkit::agent::types::AgentResult;
use genkit::agent::types::{AgentFinishReason, AgentInit, AgentInput, Artifact, SnapshotStatus};
use genkit::agent::{AgentOptions, AgentSession};
use genkit::prelude::*;
use genkit::prompt::PromptConfig;
use genkit::status::StatusCode;
use genkit::testing::ProgrammableModel;
use genkit::tool::ToolCtx;

fn instance() -> Genkit {
    Genkit::builder()
        .default_model("scripted")
        .no_prompt_dir()
        .build()
        .unwrap()
}

fn server() -> (AgentOptions, Arc<InMemorySessionStore>) {
    let store = Arc::new(InMemorySessionStore::new());
    (AgentOptions::new().store(store.clone()), store)
}

#[tokio::test]
async fn a_prompt_agent_keeps_history_across_chat_turns() -> Result<()> {
    let ai = instance();
    let model = ProgrammableModel::define(ai.registry(), "scripted")
        .respond_text("hello")
        .respond_text("again");
    let prompt = ai.define_prompt::<Value, Value>(
        PromptConfig::new("assistant")
            .model("scripted")
            .system("You are terse."),
    );
    let (options, _) = server();
    let agent = ai.define_prompt_agent("assistant", &prompt, options);
    let chat = agent.chat();
    let first = chat.send(Message::user("hi")).await?;
    assert_eq!(
        first.message.as_ref().map(Message::text).as_deref(),
        Some("hello")
    );
    let first_snapshot = chat
        .snapshot_id()
        .expect("a server-managed turn stores a snapshot");
    let second = chat.send(Message::user("and?")).await?;
    assert_eq!(second.message.map(|m| m.text()).as_deref(), Some("again"));

    // The second model call saw the system prompt and the whole history.
    let requests = model.requests();
    let texts: Vec<String> = requests[1].messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["You are terse.", "hi", "hello", "and?"]);

    let snapshot = chat.snapshot().await?;
    assert_eq!(snapshot.parent_id.as_deref(), Some(first_snapshot.as_str()));
    assert_eq!(snapshot.status, Some(SnapshotStatus::Completed));
    let stored: Vec<String> = snapshot
        .state
        .unwrap_or_default()
        .messages()
        .iter()
        .map(Message::text)
        .collect();
    // The prompt's system message is not part of the session.
    assert_eq!(stored, ["hi", "hello", "and?", "again"]);
    Ok(())
}

#[tokio::test]
async fn tools_reach_the_session_of_the_running_turn() -> Result<()> {
    let ai = instance();
    ProgrammableModel::define(ai.registry(), "scripted")
        .respond_tool_call("note", json!({"text": "remember this"}))
        .respond_text("noted");
    #[derive(Deserialize, Serialize, JsonSchema)]
    struct Note {
        text: String,
    }
    ai.define_tool(
        "note",
        "Saves a note as an artifact of the session.",
        |input: Note, ctx: ToolCtx| async move {
            let session = ctx
                .extension::<AgentSession>()
                .ok_or_else(|| Error::failed_precondition("no agent session"))?;
            session.add_artifact(Artifact::new("note", vec![Part::text(input.text)]));
            Ok("saved".to_owned())
        },
    );
    let prompt = ai.define_prompt::<Value, Value>(
        PromptConfig::new("noter").model("scripted").tools(["note"]),
    );
    let agent = ai.define_prompt_agent("noter", &prompt, AgentOptions::new());
    let chat = agent.chat();
    let mut turn = chat.send_stream(AgentInput::message(Message::user("note it")));
    let mut artifacts = Vec::new();
    while let Some(chunk) = turn.next().await {
        if let Some(a) = chunk?.artifact {
            artifacts.push(a);
        }
    }
    let output = turn.output().await?;
    assert_eq!(
        artifacts,
        [Artifact::new("note", vec![Part::text("remember this")])]
    );
    let state = chat.state().expect("client-managed state comes back");
    assert_eq!(state.artifacts(), artifacts.as_slice());
    assert_eq!(output.message.map(|m| m.text()).as_deref(), Some("noted"));
    Ok(())
}

#[tokio::test]
async fn custom_agents_stream_typed_state_as_json_patch() -> Result<()> {
    let ai = instance();
    #[derive(Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
    struct Progress {
        step: u32,
        label: String,
    }
    let agent = ai.define_custom_agent(
        "stepper",
        AgentOptions::new().state_type::<Progress>(),
        |session, _input| async move {
            session.update_custom(|p: Option<Progress>| Progress {
                step: p.map_or(1, |p| p.step + 1),
                label: "started".into(),
            })?;
            session.update_custom(|p: Option<Progress>| Progress {
                label: "done".into(),
                ..p.unwrap_or_default()
            })?;
            Ok(AgentResult::default())
        },
    );
    let meta = agent.action().desc().metadata["agent"].clone();
    assert_eq!(meta["stateManagement"], "client");
    assert_eq!(meta["abortable"], false);
    assert!(meta["stateSchema"]["properties"]["step"].is_object());

    let chat = agent.chat();
    let mut turn = chat.send_stream(AgentInput::message(Message::user("go")));
    let mut patches = Vec::new();
    while let Some(chunk) = turn.next().await {
        if let Some(p) = chunk?.custom_patch {
            patches.push(serde_json::to_value(p)?);
        }
    }
    turn.output().await?;
    assert_eq!(
        patches,
        [
            json!([{"op": "replace", "path": "", "value": {"step": 1, "label": "started"}}]),
            json!([{"op": "replace", "path": "/label", "value": "done"}]),
        ]
    );
    let state = chat.state().unwrap_or_default();
    assert_eq!(
        state.custom_as::<Progress>()?,
        Some(Progress {
            step: 1,
            label: "done".into()
        })
    );
    Ok(())
}

#[tokio::test]
async fn agents_register_three_actions_described_as_genkit_js() -> Result<()> {
    let ai = instance();
    let (options, _) = server();
    ai.define_custom_agent("helper", options, |_, _| async {
        Ok(AgentResult::default())
    });
    let agent = ai.registry().require_action("/agent/helper").await?;
    let desc = agent.desc();
    assert_eq!(
        desc.metadata["agent"],
        json!({"stateManagement": "server", "abortable": true})
    );
    assert_eq!(desc.metadata["bidi"], true);
    let snapshot = ai
        .registry()
        .require_action("/agent-snapshot/helper")
        .await?;
    assert_eq!(
        snapshot.desc().description.as_deref(),
        Some("Gets snapshot data for helper by snapshotId or sessionId")
    );
    let abort = ai.registry().require_action("/agent-abort/helper").await?;
    assert!(abort.desc().description.is_some());
    // A second definition is refused; the registry-level function says why.
    let again =
        genkit::agent::define_agent(ai.registry(), "helper", AgentOptions::new(), |_, _| async {
            Ok(AgentResult::default())
        });
    assert_eq!(again.unwrap_err().status(), StatusCode::AlreadyExists);
    Ok(())
}

#[tokio::test]
async fn unknown_snapshots_and_sessions_are_not_found_and_store_nothing() -> Result<()> {
    let ai = instance();
    let (options, store) = server();
    let agent = ai.define_custom_agent("keeper", options, |_, _| async {
        Ok(AgentResult::default())
    });
    let chat = agent.chat_from(AgentInit {
        snapshot_id: Some("no-such-snapshot".into()),
        ..AgentInit::default()
    });
    // As in Genkit JS, the invocation resolves as a failed turn (which
    // `send` reports as an error; the output shows it as the protocol does).
    let output = chat
        .send_stream(AgentInput::message(Message::user("hi")))
        .output()
        .await?;
    assert_eq!(output.finish_reason, Some(AgentFinishReason::Failed));
    let error = output.error.expect("the error is in the output");
    assert_eq!(error.status.as_deref(), Some("NOT_FOUND"));
    assert_eq!(output.snapshot_id, None);
    let err = agent
        .get_snapshot(genkit::agent::types::GetSnapshotRequest {
            session_id: Some("no-such-session".into()),
            snapshot_id: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(
        store.latest("no-such-session").await.unwrap_err().status(),
        StatusCode::NotFound
    );
    assert_eq!(agent.abort("no-such-snapshot").await?, None);
    Ok(())
}

#[tokio::test]
async fn a_resume_that_answers_no_interrupt_fails_the_turn_and_keeps_the_state() -> Result<()> {
    let ai = instance();
    ProgrammableModel::define(ai.registry(), "scripted").respond_text("hello");
    let prompt = ai.define_prompt::<Value, Value>(PromptConfig::new("p").model("scripted"));
    let (options, store) = server();
    let agent = ai.define_prompt_agent("asker", &prompt, options);
    let chat = agent.chat();
    chat.send(Message::user("hi")).await?;
    let good = chat.snapshot_id().expect("snapshot");
    let resume: genkit::agent::types::AgentResume = serde_json::from_value(json!({
        "respond": [{"toolResponse": {"name": "ghost", "ref": "1", "output": {}}}]
    }))?;
    let output = chat
        .send_stream(AgentInput::resume(resume))
        .output()
        .await?;
    assert_eq!(output.finish_reason, Some(AgentFinishReason::Failed));
    let error = output.error.expect("the error is in the output");
    // Nothing is pending (Genkit JS answers INVALID_ARGUMENT, "not found in
    // session history"; a resume is checked against the stored session's
    // interrupts first, issue 26).
    assert_eq!(error.status.as_deref(), Some("FAILED_PRECONDITION"));
    assert!(
        error
            .message
            .contains("the session has no pending interrupt"),
        "{}",
        error.message
    );
    // The failed turn is recorded, with the state it started from.
    let session = store.latest(&chat.session_id().unwrap()).await?.snapshot;
    assert_eq!(session.status, Some(SnapshotStatus::Failed));
    assert_eq!(session.parent_id.as_deref(), Some(good.as_str()));
    let good_state = store.get(&good).await?.snapshot.state;
    assert_eq!(session.state, good_state);
    // The conversation still continues from the last good snapshot.
    assert_eq!(chat.snapshot_id().as_deref(), Some(good.as_str()));
    Ok(())
}

#[tokio::test]
async fn a_turn_on_a_session_that_is_still_running_is_refused() -> Result<()> {
    let ai = instance();
    let (options, _) = server();
    let agent = ai.define_custom_agent("slow", options, |session, _| async move {
        session.aborted().await;
        Ok(AgentResult::default())
    });
    let detached = agent
        .action()
        .run(
            AgentInit::default(),
            [AgentInput::message(Message::user("work")).with_detach()],
        )
        .await?;
    let pending = detached.snapshot_id.clone().expect("a pending snapshot");
    let by_snapshot = agent.chat_from(AgentInit {
        snapshot_id: Some(pending.clone()),
        ..AgentInit::default()
    });
    // By snapshot id, as in Genkit JS: a failed turn (the snapshot is not
    // resumable), nothing stored.
    let output = by_snapshot
        .send_stream(AgentInput::message(Message::user("more")))
        .output()
        .await?;
    assert_eq!(output.finish_reason, Some(AgentFinishReason::Failed));
    let error = output.error.expect("the error is in the output");
    assert_eq!(error.status.as_deref(), Some("INVALID_ARGUMENT"));
    assert!(
        error.message.contains("not resumable (status: pending)"),
        "{}",
        error.message
    );
    assert_eq!(output.snapshot_id, None);
    // By session id the running turn is refused (Genkit JS would start a
    // concurrent branch racing on the same history).
    let by_session = agent.chat_from(AgentInit {
        session_id: detached.session_id.clone(),
        ..AgentInit::default()
    });
    let err = by_session.send(Message::user("more")).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert_eq!(agent.abort(&pending).await?, Some(SnapshotStatus::Pending));
    Ok(())
}

#[tokio::test]
async fn client_managed_agents_refuse_session_ids_and_detach() -> Result<()> {
    let ai = instance();
    let agent = ai.define_custom_agent("local", AgentOptions::new(), |_, _| async {
        Ok(AgentResult::default())
    });
    let chat = agent.chat_from(AgentInit {
        session_id: Some("s1".into()),
        ..AgentInit::default()
    });
    let err = chat.send(Message::user("hi")).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert!(
        err.message().contains("Cannot use 'sessionId'"),
        "{}",
        err.message()
    );
    let err = agent
        .action()
        .run(
            AgentInit::default(),
            [AgentInput::message(Message::user("hi")).with_detach()],
        )
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    Ok(())
}

#[tokio::test]
async fn a_prompt_agent_on_a_prompt_file() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("genkit-agent-prompts-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("helper.prompt"),
        "---\nmodel: scripted\n---\n{{role \"system\"}}\nYou help with files.\n",
    )?;
    let ai = Genkit::builder().prompt_dir(&dir).build()?;
    let model = ProgrammableModel::define(ai.registry(), "scripted").respond_text("sure");
    let prompt = ai.prompt::<Value, Value>("helper")?;
    let agent = ai.define_prompt_agent("fileHelper", &prompt, AgentOptions::new());
    let output = agent.chat().send(Message::user("help")).await?;
    std::fs::remove_dir_all(&dir)?;
    assert_eq!(output.message.map(|m| m.text()).as_deref(), Some("sure"));
    let sent: Vec<String> = model.requests()[0]
        .messages
        .iter()
        .map(|m| m.text().trim().to_owned())
        .collect();
    assert_eq!(sent, ["You help with files.", "help"]);
    // The prompt's system message stays out of the session.
    let kept: Vec<String> = output
        .state
        .unwrap_or_default()
        .messages()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(kept, ["help", "sure"]);
    Ok(())
}

#[tokio::test]
async fn a_session_resumed_by_id_goes_on_after_a_failed_turn() -> Result<()> {
    let ai = instance();
    let (options, store) = server();
    let agent = ai.define_custom_agent("flaky", options, |session, input| async move {
        let message = input.message.expect("every turn here sends a message");
        if message.text() == "fail" {
            return Err(Error::new(StatusCode::Unavailable, "the model is down"));
        }
        // The runtime has added the user's message to the session already.
        session.add_messages([Message::model(format!("ok: {}", message.text()))]);
        Ok(AgentResult::default())
    });
    let first = agent.chat();
    first.send(Message::user("one")).await?;
    let session_id = first.session_id().expect("a server-managed session");
    // Every later turn resumes by session id, as an app restarted with
    // `--session ID` does.
    let by_session = || {
        agent.chat_from(AgentInit {
            session_id: Some(session_id.clone()),
            ..AgentInit::default()
        })
    };
    // `send` reports the failed turn as an error, not as an answer (issue
    // 27): in process, the error the turn failed with.
    let error = by_session()
        .send(Message::user("fail"))
        .await
        .expect_err("a failed turn is an error");
    assert_eq!(error.status(), StatusCode::Unavailable);
    assert_eq!(error.message(), "the model is down");
    // The protocol's output masks it, as a remote client sees it.
    let failed = by_session()
        .send_stream(AgentInput::message(Message::user("fail")))
        .output()
        .await?;
    assert_eq!(failed.finish_reason, Some(AgentFinishReason::Failed));
    let masked = failed.error.expect("a failed output carries its error");
    assert_eq!(
        (masked.status.as_deref(), masked.message.as_str()),
        (Some("INTERNAL"), "Internal Error")
    );
    for text in ["two", "three"] {
        let output = by_session().send(Message::user(text)).await?;
        assert_ne!(
            output.finish_reason,
            Some(AgentFinishReason::Failed),
            "{text}: {:?}",
            output.error
        );
        assert!(output.snapshot_id.is_some(), "{text} is stored");
    }
    let latest = store.latest(&session_id).await?;
    let texts: Vec<String> = latest
        .snapshot
        .state
        .and_then(|s| s.messages)
        .map(|m| m.iter().map(|m| m.text()).collect())
        .unwrap_or_default();
    assert_eq!(
        texts,
        ["one", "ok: one", "two", "ok: two", "three", "ok: three"],
        "the failed turn left no trace in the history"
    );
    assert_eq!(
        latest.session_version, 5,
        "one, the failed turn (sent twice), two, three"
    );
    Ok(())
}

/// A tool cache shared by an agent's sessions keeps each session's results
/// to that session: the second session's identical call runs the tool.
#[tokio::test]
async fn a_tool_cache_does_not_serve_one_session_to_another() -> Result<()> {
    use genkit::middleware::{GenerateMiddleware, tool_cache};
    use std::sync::atomic::{AtomicUsize, Ordering};

    let ai = instance();
    ProgrammableModel::define(ai.registry(), "scripted")
        .respond_tool_call("lookup", json!({"q": "x"}))
        .respond_text("first")
        .respond_tool_call("lookup", json!({"q": "x"}))
        .respond_text("again")
        .respond_tool_call("lookup", json!({"q": "x"}))
        .respond_text("other");
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    ai.define_tool("lookup", "Looks up.", move |_input: Value, _ctx| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        async move { Ok(json!(n)) }
    });
    let cache: Arc<dyn GenerateMiddleware> =
        Arc::new(tool_cache().ttl("lookup", std::time::Duration::from_secs(600)));
    ai.define_middleware("cache", "A tool cache", move |_config| Ok(cache.clone()));
    let prompt = ai.define_prompt::<Value, Value>(
        PromptConfig::new("cached")
            .model("scripted")
            .tools(["lookup"])
            .use_middleware("cache", None),
    );
    let (options, _) = server();
    let agent = ai.define_prompt_agent("cached", &prompt, options);
    let one = agent.chat();
    one.send(Message::user("look")).await?;
    one.send(Message::user("look again")).await?;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the same session reuses");
    agent.chat().send(Message::user("look")).await?;
    assert_eq!(runs.load(Ordering::SeqCst), 2, "another session runs it");
    Ok(())
}
