//! A rule-based model, so the app runs with no API key and no server. It
//! reads the conversation as a (simple) model would:
//!
//! - the newest user message says what to do: check status, read logs
//!   (with a level and a relative window taken from the words: "warnings in
//!   the last 15 minutes"), restart, or recall what happened earlier;
//! - the services it names, or, for "it" / "that one" / nothing, the service
//!   the earlier turns were about (the unhealthy one when several were);
//! - once this turn's tool results are in, it answers from them;
//! - asked which tools it has, it names those the request offers (with
//!   `--mcp`, the MCP servers' too); told `call TOOL {json}`, it calls that
//!   offered tool (an MCP server's, say) with that input.
//!
//! Swap in a real model with an API key (see `models.rs`).

use genkit::model::{Model, ModelCtx, ModelOptions};
use genkit::prelude::*;
use genkit::types::{
    FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk, ModelSupports, Role,
    ToolRequest, ToolResponse,
};

use crate::fleet::Service;

/// The offline model's name.
pub const OFFLINE_MODEL: &str = "offline/ops-rules";

/// Registers the offline model.
pub fn define_offline_model(ai: &Genkit) -> Model {
    ai.define_model(
        ModelOptions::new(OFFLINE_MODEL)
            .label("ops-agent rule-based offline model")
            .supports(ModelSupports {
                multiturn: Some(true),
                tools: Some(true),
                system_role: Some(true),
                ..ModelSupports::default()
            }),
        |req: GenerateRequest, ctx: ModelCtx| async move {
            let message = respond_to(&req);
            if ctx.is_streaming() {
                let requests: Vec<Part> = message.tool_request_parts().cloned().collect();
                if !requests.is_empty() {
                    ctx.send_chunk(GenerateResponseChunk::new(requests));
                }
                for word in message.text().split_inclusive(' ') {
                    ctx.send_chunk(GenerateResponseChunk::new(vec![Part::text(word)]));
                }
            }
            Ok(GenerateResponse::new(message, FinishReason::Stop))
        },
    )
}

const HELP: &str = "I can check a service's status, read its logs (say a window such as \
\"last 15 minutes\" and a level such as \"warnings\"), and restart it once you approve. \
The services are api, worker, scheduler and db.";

/// The model's reply to `req`: about the tools it offers when asked, else
/// [`respond`].
fn respond_to(req: &GenerateRequest) -> Message {
    let offered: Vec<&str> = req
        .tools
        .iter()
        .flat_map(|t| t.iter())
        .map(|t| t.name.as_str())
        .collect();
    about_tools(&req.messages, &offered).unwrap_or_else(|| respond(&req.messages))
}

/// "Which tools do you have?": the offered tools' names. "call TOOL
/// {json}": a request to call the offered tool TOOL with that input (`{}`
/// when there is none). `None` for anything else, or once this turn's tool
/// results are in.
fn about_tools(messages: &[Message], offered: &[&str]) -> Option<Message> {
    let user_at = messages.iter().rposition(|m| m.role == Role::User)?;
    if tool_responses(&messages[user_at + 1..]).next().is_some() {
        return None;
    }
    let question = messages[user_at].text();
    let words = Words::of(&question);
    if words.has(&["tools"])
        && words.has_phrase(&["which tools", "what tools", "list tools", "your tools"])
    {
        return Some(Message::model(format!(
            "I can use these tools: {}.",
            offered.join(", ")
        )));
    }
    let rest = question.trim().strip_prefix("call ")?;
    let (tool, input) = rest
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or((rest.trim(), ""));
    if !offered.contains(&tool) {
        return None;
    }
    let input = if input.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(input.trim()).ok()?
    };
    Some(Message::model(vec![call(tool, input, tool)]))
}

/// The model's reply to `messages` (the system prompt, the kept history,
/// and this turn so far).
pub fn respond(messages: &[Message]) -> Message {
    let Some(user_at) = messages.iter().rposition(|m| m.role == Role::User) else {
        return Message::model(HELP);
    };
    let question = messages[user_at].text();
    let (earlier, this_turn) = (&messages[..user_at], &messages[user_at + 1..]);
    let results: Vec<&ToolResponse> = tool_responses(this_turn).collect();
    if !results.is_empty() {
        return Message::model(answer_from(&results));
    }
    let words = Words::of(&question);
    if words.asks_about_the_past() {
        return Message::model(recall(earlier));
    }
    let mut targets = words.services();
    let intent = Intent::of(&words);
    if targets.is_empty() && (intent.any() || words.refers_back()) {
        targets = focus(earlier);
    }
    if targets.is_empty() && words.has(&["thanks", "thank", "thx"]) {
        return Message::model("You're welcome.");
    }
    if targets.is_empty() {
        return Message::model(if intent.any() {
            format!("Which service do you mean? {HELP}")
        } else {
            HELP.to_owned()
        });
    }
    let intent = if intent.any() {
        intent
    } else {
        Intent {
            status: true,
            ..Intent::default()
        }
    };
    let mut calls = Vec::new();
    for s in targets {
        let name = s.name();
        if intent.status {
            calls.push(call("getServiceStatus", json!({"service": name}), name));
        }
        if intent.logs {
            let input = json!({"service": name, "level": words.level(), "window": words.window()});
            calls.push(call("queryLogs", input, name));
        }
        if intent.restart {
            let input = json!({"service": name, "reason": format!("asked: {question}")});
            calls.push(call("restartService", input, name));
        }
    }
    Message::model(calls)
}

fn call(tool: &str, input: Value, service: &str) -> Part {
    Part::tool_request(ToolRequest::new(tool, input).with_ref(format!("{tool}-{service}")))
}

fn tool_responses(messages: &[Message]) -> impl Iterator<Item = &ToolResponse> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.content.iter().filter_map(Part::as_tool_response))
}

/// The lower-cased words of a message.
struct Words {
    text: String,
    words: Vec<String>,
}

impl Words {
    fn of(text: &str) -> Self {
        let text = text.to_lowercase();
        let words = text
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect();
        Self { text, words }
    }

    fn has(&self, any: &[&str]) -> bool {
        self.words.iter().any(|w| any.contains(&w.as_str()))
    }

    fn has_phrase(&self, any: &[&str]) -> bool {
        any.iter().any(|p| self.text.contains(p))
    }

    fn services(&self) -> Vec<Service> {
        if self.has(&["all", "everything", "fleet", "services", "everyone"]) {
            return Service::ALL.to_vec();
        }
        let mut found = Vec::new();
        for s in self.words.iter().filter_map(|w| Service::from_word(w)) {
            if !found.contains(&s) {
                found.push(s);
            }
        }
        found
    }

    fn refers_back(&self) -> bool {
        self.has(&["it", "its", "that", "this", "same", "again", "one"])
    }

    /// "What did you restart earlier?", "recap", "so far": a question about
    /// the conversation, answered from the history.
    fn asks_about_the_past(&self) -> bool {
        self.has(&[
            "earlier",
            "recap",
            "summary",
            "summarize",
            "summarise",
            "remind",
        ]) || self.has_phrase(&["did you", "have you", "did we", "have we", "so far"])
    }

    fn level(&self) -> &'static str {
        if self.has(&["info", "everything", "all"]) {
            "info"
        } else if self.has(&["warn", "warns", "warning", "warnings"]) {
            "warn"
        } else {
            "error"
        }
    }

    /// The relative window the words name ("last 15 minutes", "2h", "past
    /// hour"), as the tool spells it; "1h" when they name none.
    fn window(&self) -> String {
        let unit_of = |w: &str| match w {
            "s" | "sec" | "secs" | "second" | "seconds" => Some("s"),
            "m" | "min" | "mins" | "minute" | "minutes" => Some("m"),
            "h" | "hr" | "hrs" | "hour" | "hours" => Some("h"),
            "d" | "day" | "days" => Some("d"),
            _ => None,
        };
        for (i, w) in self.words.iter().enumerate() {
            let digits: String = w.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                continue;
            }
            let rest = &w[digits.len()..];
            let unit = if rest.is_empty() {
                self.words.get(i + 1).and_then(|next| unit_of(next))
            } else {
                unit_of(rest)
            };
            if let Some(unit) = unit {
                return format!("{digits}{unit}");
            }
        }
        if self.has(&["today", "day"]) {
            "1d".into()
        } else {
            "1h".into()
        }
    }
}

#[derive(Default, Clone, Copy)]
struct Intent {
    status: bool,
    logs: bool,
    restart: bool,
}

impl Intent {
    fn of(words: &Words) -> Self {
        let why = words.has(&[
            "why",
            "wrong",
            "happened",
            "cause",
            "investigate",
            "diagnose",
        ]);
        Intent {
            status: why
                || words.has(&[
                    "status", "health", "healthy", "up", "down", "ok", "okay", "running", "cpu",
                    "memory", "load", "check", "how", "alive", "slow",
                ]),
            logs: why || words.has(&["log", "logs", "error", "errors", "warning", "warnings"]),
            restart: words.has(&["restart", "reboot", "bounce", "restarting"])
                || words.has_phrase(&["bring it back", "start it again"]),
        }
    }

    fn any(self) -> bool {
        self.status || self.logs || self.restart
    }
}

/// The services the conversation was last about: those of the newest earlier
/// turn that named any, narrowed to the unhealthy ones when it named several.
fn focus(earlier: &[Message]) -> Vec<Service> {
    for (i, m) in earlier.iter().enumerate().rev() {
        let named: Vec<Service> = match m.role {
            Role::User => Words::of(&m.text()).services(),
            Role::Model => m
                .tool_requests()
                .filter_map(|r| r.input.as_ref()?.get("service")?.as_str())
                .filter_map(Service::from_word)
                .fold(Vec::new(), |mut acc, s| {
                    if !acc.contains(&s) {
                        acc.push(s);
                    }
                    acc
                }),
            _ => Vec::new(),
        };
        if named.len() > 1 {
            let unhealthy: Vec<Service> = tool_responses(&earlier[i..])
                .filter(|r| r.name == "getServiceStatus")
                .filter_map(|r| r.output.as_ref())
                .filter(|o| {
                    !o["summary"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("healthy")
                })
                .filter_map(|o| o["service"].as_str().and_then(Service::from_word))
                .collect();
            if !unhealthy.is_empty() {
                return unhealthy.into_iter().take(1).collect();
            }
        }
        if !named.is_empty() {
            return named;
        }
    }
    Vec::new()
}

/// The answer from this turn's tool results.
fn answer_from(results: &[&ToolResponse]) -> String {
    let mut lines = Vec::new();
    let mut suggest_restart = Vec::new();
    for r in results {
        let out = r.output.clone().unwrap_or(Value::Null);
        let service = out["service"].as_str().unwrap_or("?").to_owned();
        match r.name.as_str() {
            "getServiceStatus" => {
                let summary = out["summary"].as_str().unwrap_or("no status").to_owned();
                if !out["online"].as_bool().unwrap_or(true) {
                    suggest_restart.push(service);
                }
                lines.push(format!("- {summary}."));
            }
            "queryLogs" => {
                let level = out["level"].as_str().unwrap_or("error");
                let window = out["window"].as_str().unwrap_or("1h");
                let found: Vec<&str> = out["lines"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if found.is_empty() {
                    lines.push(format!(
                        "- {service} has no {level} log lines in the last {window}."
                    ));
                } else {
                    lines.push(format!(
                        "- {service} logs ({level} and worse, last {window}):"
                    ));
                    lines.extend(found.iter().take(5).map(|l| format!("    {l}")));
                }
            }
            "restartService" => {
                if out["denied"].as_bool() == Some(true) {
                    let who = r
                        .reference
                        .as_deref()
                        .and_then(|r| r.strip_prefix("restartService-"))
                        .unwrap_or("the service");
                    lines.push(format!("- I did not restart {who}: you denied it."));
                } else {
                    let summary = out["status"]["summary"].as_str().unwrap_or("done");
                    lines.push(format!("- Restarted {service}: {summary}."));
                    suggest_restart.retain(|s| *s != service);
                }
            }
            other => lines.push(format!("- {other} returned {out}")),
        }
    }
    if !suggest_restart.is_empty() {
        lines.push(format!(
            "Shall I restart {}? Say \"restart it\".",
            suggest_restart.join(" and ")
        ));
    }
    lines.join("\n")
}

/// What the earlier turns did, from the history alone.
fn recall(earlier: &[Message]) -> String {
    let asked: Vec<String> = earlier
        .iter()
        .filter(|m| m.role == Role::User && m.metadata_value("agentPreamble").is_none())
        .map(|m| format!("\"{}\"", m.text()))
        .collect();
    if asked.is_empty() {
        return "Nothing yet: this is the start of our conversation.".into();
    }
    let mut facts = Vec::new();
    for r in tool_responses(earlier) {
        let out = r.output.clone().unwrap_or(Value::Null);
        match r.name.as_str() {
            "getServiceStatus" => {
                if let Some(s) = out["summary"].as_str() {
                    facts.push(format!("- I checked: {s}."));
                }
            }
            "queryLogs" => {
                let service = out["service"].as_str().unwrap_or("?");
                match out["lines"].as_array().and_then(|l| l.first()) {
                    Some(first) => facts.push(format!(
                        "- {service}'s logs showed: {}",
                        first.as_str().unwrap_or_default()
                    )),
                    None => facts.push(format!("- {service}'s logs were clean.")),
                }
            }
            "restartService" if out["denied"].as_bool() == Some(true) => {
                facts.push("- You denied a restart, so I did not run it.".into());
            }
            "restartService" => {
                let service = out["service"].as_str().unwrap_or("?");
                facts.push(format!(
                    "- I restarted {service} with your approval; after that: {}.",
                    out["status"]["summary"].as_str().unwrap_or("no status")
                ));
            }
            _ => {}
        }
    }
    // The same fact twice (a log line seen by two queries) is said once.
    let mut seen = std::collections::HashSet::new();
    facts.retain(|f| seen.insert(f.clone()));
    let mut answer = format!(
        "Earlier in this session you asked {}.",
        asked.join(", then ")
    );
    if !facts.is_empty() {
        answer.push('\n');
        answer.push_str(&facts.join("\n"));
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(m: &Message) -> Vec<(String, Value)> {
        m.tool_requests()
            .map(|r| (r.name.clone(), r.input.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn why_questions_check_status_and_logs_with_the_window_asked() {
        let reply = respond(&[Message::user(
            "Why is the scheduler down? Show warnings from the last 15 minutes",
        )]);
        let calls = requests(&reply);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[0].0, "getServiceStatus");
        assert_eq!(
            calls[1].1,
            json!({"service": "scheduler", "level": "warn", "window": "15m"})
        );
    }

    #[test]
    fn restart_it_refers_to_the_unhealthy_service_discussed_before() {
        let status = |s: &str, summary: &str| {
            Part::tool_response(
                ToolResponse::new(
                    "getServiceStatus",
                    json!({"service": s, "online": true, "summary": summary}),
                )
                .with_ref(format!("getServiceStatus-{s}")),
            )
        };
        let history = vec![
            Message::user("how is everything?"),
            Message::model(vec![
                call("getServiceStatus", json!({"service": "api"}), "api"),
                call("getServiceStatus", json!({"service": "db"}), "db"),
            ]),
            Message::tool(vec![
                status("api", "api is healthy (cpu 4%)"),
                status("db", "db is online but overloaded (cpu 97%)"),
            ]),
            Message::model("..."),
            Message::user("restart it please"),
        ];
        let calls = requests(&respond(&history));
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].0, "restartService");
        assert_eq!(calls[0].1["service"], "db");
    }

    #[test]
    fn it_answers_from_this_turns_results_and_recalls_earlier_ones() {
        let history = vec![
            Message::user("restart the worker"),
            Message::model(vec![call(
                "restartService",
                json!({"service": "worker"}),
                "worker",
            )]),
            Message::tool(vec![Part::tool_response(ToolResponse::new(
                "restartService",
                json!({"service": "worker", "status": {"summary": "worker is healthy"}}),
            ))]),
        ];
        assert_eq!(
            respond(&history).text(),
            "- Restarted worker: worker is healthy."
        );
        let mut later = history.clone();
        later.push(Message::model("- Restarted worker: worker is healthy."));
        later.push(Message::user("What did you restart earlier?"));
        let text = respond(&later).text();
        assert!(
            text.contains("I restarted worker with your approval"),
            "{text}"
        );
        assert!(text.contains("\"restart the worker\""), "{text}");
    }

    #[test]
    fn without_a_service_or_an_intent_it_explains_itself() {
        assert!(
            respond(&[Message::user("hello")])
                .text()
                .contains("api, worker")
        );
        assert!(
            respond(&[Message::user("check the logs")])
                .text()
                .starts_with("Which service")
        );
    }

    #[test]
    fn it_names_the_offered_tools_and_calls_one_it_is_told_to() {
        let offered = ["getServiceStatus", "add"];
        let text = about_tools(&[Message::user("Which tools do you have?")], &offered)
            .unwrap()
            .text();
        assert_eq!(text, "I can use these tools: getServiceStatus, add.");
        let reply =
            about_tools(&[Message::user(r#"call add {"a": 1, "b": 2}"#)], &offered).unwrap();
        assert_eq!(
            requests(&reply),
            [("add".to_owned(), json!({"a": 1, "b": 2}))]
        );
        let reply = about_tools(&[Message::user("call add")], &offered).unwrap();
        assert_eq!(requests(&reply), [("add".to_owned(), json!({}))]);
        // Not offered, not JSON, or not about tools: the ops rules answer.
        assert!(about_tools(&[Message::user("call subtract {}")], &offered).is_none());
        assert!(about_tools(&[Message::user("call add {oops")], &offered).is_none());
        assert!(about_tools(&[Message::user("how is the db?")], &offered).is_none());
    }
}
