//! The assistant's tools: read-only views of a (simulated) fleet.

use genkit::prelude::*;

/// A service of the fleet.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Service {
    /// The public API.
    Api,
    /// Background workers.
    Worker,
    /// The job scheduler.
    Scheduler,
    /// The database.
    Db,
}

impl Service {
    /// All services.
    pub const ALL: [Service; 4] = [
        Service::Api,
        Service::Worker,
        Service::Scheduler,
        Service::Db,
    ];

    /// The service's name as the tools spell it.
    pub fn name(self) -> &'static str {
        match self {
            Service::Api => "api",
            Service::Worker => "worker",
            Service::Scheduler => "scheduler",
            Service::Db => "db",
        }
    }
}

/// Input of `getServiceStatus`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct StatusInput {
    /// Which service to check.
    pub service: Service,
}

/// What `getServiceStatus` reports.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Status {
    /// Whether the service answers health checks.
    pub online: bool,
    /// CPU use, 0..1.
    pub cpu: f64,
    /// Memory use, 0..1.
    pub memory: f64,
}

/// Input of `queryLogs`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogsInput {
    /// Which service's logs.
    pub service: Service,
    /// How far back to look, in minutes (1..=1440).
    #[schemars(range(min = 1, max = 1440))]
    pub recent_minutes: u32,
}

/// The simulated state of the fleet: the database is struggling.
pub fn status_of(service: Service) -> Status {
    match service {
        Service::Db => Status {
            online: true,
            cpu: 0.97,
            memory: 0.91,
        },
        Service::Api => Status {
            online: true,
            cpu: 0.42,
            memory: 0.55,
        },
        Service::Worker => Status {
            online: true,
            cpu: 0.18,
            memory: 0.33,
        },
        Service::Scheduler => Status {
            online: false,
            cpu: 0.0,
            memory: 0.0,
        },
    }
}

/// Recent error lines of a service.
pub fn logs_of(service: Service, minutes: u32) -> Vec<String> {
    match service {
        Service::Db => vec![
            format!("[last {minutes}m] ERROR slow query: 12.4s on orders (seq scan)"),
            "ERROR connection pool exhausted (100/100)".into(),
        ],
        Service::Scheduler => vec!["ERROR process exited with code 137 (out of memory)".into()],
        _ => vec![],
    }
}

/// `getServiceStatus`: a tool as a type (its input and output types give
/// the schemas the model sees).
pub struct ServiceStatus;

impl ToolImpl for ServiceStatus {
    type Input = StatusInput;
    type Output = Status;

    fn name(&self) -> &str {
        "getServiceStatus"
    }

    fn description(&self) -> String {
        "Current status of a service: whether it is online, CPU and memory use. \
         Use it when the user asks whether a service is healthy."
            .into()
    }

    async fn call(&self, input: StatusInput, _ctx: ToolCtx) -> Result<Status> {
        Ok(status_of(input.service))
    }
}

/// `queryLogs`: recent error lines of a service.
pub struct QueryLogs;

impl ToolImpl for QueryLogs {
    type Input = LogsInput;
    type Output = Vec<String>;

    fn name(&self) -> &str {
        "queryLogs"
    }

    fn description(&self) -> String {
        "Recent error log lines of a service. Use it to find out why a service misbehaves.".into()
    }

    async fn call(&self, input: LogsInput, _ctx: ToolCtx) -> Result<Vec<String>> {
        Ok(logs_of(input.service, input.recent_minutes))
    }
}

/// The names flows hand to `generate`: registered tools are found by name,
/// so no flow needs a tool handle.
pub const TOOLS: [&str; 2] = ["getServiceStatus", "queryLogs"];

/// Registers the tools.
pub fn define_tools(ai: &Genkit) {
    ai.define_tool_impl(ServiceStatus);
    ai.define_tool_impl(QueryLogs);
}
