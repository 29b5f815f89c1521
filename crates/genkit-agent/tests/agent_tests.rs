//! genkit-agent's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

#[path = "support/agent_tools.rs"]
mod agent_tools;

mod agent_conformance;
mod agent_sessions;
mod agent_trust;
mod genkit_js_agent_records;
mod genkit_js_agent_replay;
mod history_policy;
mod middleware_agents;
mod tool_approval;
