//! The simulated fleet the tools look at: four services, one overloaded and
//! one down, with a few minutes of logs each. Restarting a service brings it
//! back. The state lives in the process (a real app would call its
//! monitoring and orchestration APIs here).

use std::collections::HashMap;
use std::time::Duration;

use genkit::prelude::*;
use parking_lot::Mutex;

/// A service of the fleet (the tools' `service` enum).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq, Hash)]
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
    /// All services, in the order answers list them.
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

    /// The service a name or a common synonym stands for.
    pub fn from_word(word: &str) -> Option<Service> {
        match word {
            "api" | "apis" | "gateway" => Some(Service::Api),
            "worker" | "workers" => Some(Service::Worker),
            "scheduler" | "schedulers" | "cron" => Some(Service::Scheduler),
            "db" | "database" | "databases" | "postgres" => Some(Service::Db),
            _ => None,
        }
    }
}

/// A log level; a query for one level returns it and the more severe ones.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Errors only.
    #[default]
    Error,
    /// Warnings and errors.
    Warn,
    /// Everything.
    Info,
}

impl Level {
    fn includes(self, line: Level) -> bool {
        let rank = |l: Level| match l {
            Level::Error => 0,
            Level::Warn => 1,
            Level::Info => 2,
        };
        rank(line) <= rank(self)
    }

    /// The level as logs print it.
    pub fn label(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
        }
    }
}

/// What `getServiceStatus` reports about a service.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct Status {
    /// The service.
    pub service: Service,
    /// Whether it answers health checks.
    pub online: bool,
    /// CPU use, 0..1.
    pub cpu: f64,
    /// Memory use, 0..1.
    pub memory: f64,
    /// One line a person can read: "db is online but overloaded (cpu 97%, memory 91%)".
    pub summary: String,
}

#[derive(Debug, Clone, Copy)]
struct State {
    online: bool,
    cpu: f64,
    memory: f64,
}

struct LogLine {
    minutes_ago: u32,
    level: Level,
    text: &'static str,
}

/// The fleet: service states, their logs and the restarts done so far.
pub struct Fleet {
    states: Mutex<HashMap<Service, State>>,
    restarted: Mutex<Vec<Service>>,
    restarts: std::sync::atomic::AtomicUsize,
    latency: Duration,
    restart_settle: Duration,
}

impl Default for Fleet {
    fn default() -> Self {
        Self::new(Duration::ZERO)
    }
}

fn state(online: bool, cpu: f64, memory: f64) -> State {
    State {
        online,
        cpu,
        memory,
    }
}

impl Fleet {
    /// The fleet as the demo starts it: the database overloaded, the
    /// scheduler down. Every tool call waits `latency` first (a slow
    /// monitoring API, to show Ctrl-C cancelling a turn).
    pub fn new(latency: Duration) -> Self {
        let states = HashMap::from([
            (Service::Api, state(true, 0.42, 0.55)),
            (Service::Worker, state(true, 0.18, 0.33)),
            (Service::Scheduler, state(false, 0.0, 0.0)),
            (Service::Db, state(true, 0.97, 0.91)),
        ]);
        Self {
            states: Mutex::new(states),
            restarted: Mutex::new(Vec::new()),
            restarts: std::sync::atomic::AtomicUsize::new(0),
            latency,
            restart_settle: Duration::ZERO,
        }
    }

    /// The same fleet, where a restarted service takes `settle` to come
    /// back before `restartService` answers (a real restart waits for the
    /// service's health check). The restart is recorded before that wait,
    /// so a replica dying during it leaves an outcome a retry reuses.
    pub fn with_restart_settle(mut self, settle: Duration) -> Self {
        self.restart_settle = settle;
        self
    }

    /// How long a restarted service takes to settle, if it takes any time
    /// (see [`Fleet::with_restart_settle`]).
    pub fn restart_settle_time(&self) -> Option<Duration> {
        (!self.restart_settle.is_zero()).then_some(self.restart_settle)
    }

    /// Waits as long as a call to the (simulated) monitoring API takes.
    pub async fn call_latency(&self) {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
    }

    /// The current status of `service`.
    pub fn status(&self, service: Service) -> Status {
        let s = self
            .states
            .lock()
            .get(&service)
            .copied()
            .unwrap_or(state(false, 0.0, 0.0));
        let name = service.name();
        let (cpu, memory) = (percent(s.cpu), percent(s.memory));
        let summary = if !s.online {
            format!("{name} is DOWN (not answering health checks)")
        } else if s.cpu > 0.9 || s.memory > 0.9 {
            format!("{name} is online but overloaded (cpu {cpu}%, memory {memory}%)")
        } else {
            format!("{name} is healthy (cpu {cpu}%, memory {memory}%)")
        };
        Status {
            service,
            online: s.online,
            cpu: s.cpu,
            memory: s.memory,
            summary,
        }
    }

    /// Log lines of `service` from the last `minutes`, at `level` or worse,
    /// newest first, each prefixed with its age.
    pub fn logs(&self, service: Service, level: Level, minutes: u32) -> Vec<String> {
        let restarted = self.restarted.lock().contains(&service);
        let fresh = restarted.then_some(LogLine {
            minutes_ago: 0,
            level: Level::Info,
            text: "restarted by ops-agent; health check passing",
        });
        fresh
            .into_iter()
            .chain(history_of(service))
            .filter(|l| l.minutes_ago <= minutes && level.includes(l.level))
            .map(|l| format!("[{}m ago] {} {}", l.minutes_ago, l.level.label(), l.text))
            .collect()
    }

    /// Restarts `service`: it comes back online at a normal load.
    pub fn restart(&self, service: Service) -> Status {
        let fresh = match service {
            Service::Db => state(true, 0.35, 0.40),
            _ => state(true, 0.12, 0.20),
        };
        self.states.lock().insert(service, fresh);
        self.restarts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut restarted = self.restarted.lock();
        if !restarted.contains(&service) {
            restarted.push(service);
        }
        drop(restarted);
        self.status(service)
    }
}

#[cfg(test)]
impl Fleet {
    /// How many restarts ran.
    pub fn restarts(&self) -> usize {
        self.restarts.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn percent(x: f64) -> i64 {
    (x * 100.0).round() as i64
}

fn history_of(service: Service) -> Vec<LogLine> {
    let line = |minutes_ago, level, text| LogLine {
        minutes_ago,
        level,
        text,
    };
    match service {
        Service::Db => vec![
            line(3, Level::Error, "connection pool exhausted (100/100)"),
            line(9, Level::Error, "slow query: 12.4s on orders (seq scan)"),
            line(41, Level::Warn, "autovacuum running on orders for 38m"),
            line(96, Level::Info, "checkpoint complete"),
        ],
        Service::Scheduler => vec![
            line(
                7,
                Level::Error,
                "process exited with code 137 (out of memory)",
            ),
            line(8, Level::Warn, "heap at 98% of its 2 GiB limit"),
            line(55, Level::Info, "scheduled 1204 jobs"),
        ],
        Service::Api => vec![
            line(
                20,
                Level::Warn,
                "p99 latency 870ms on /orders (waiting on db)",
            ),
            line(70, Level::Info, "deployed v2.14.1"),
        ],
        Service::Worker => vec![line(30, Level::Info, "processed 18220 jobs")],
    }
}

/// Parses a relative time window: `90s`, `15m`, `2h`, `1d` (also `15 min`,
/// `2 hours`); between one minute and a day.
pub fn parse_window(window: &str) -> Result<u32> {
    let w = window.trim().to_lowercase();
    let digits: String = w.chars().take_while(char::is_ascii_digit).collect();
    let unit = w[digits.len()..].trim();
    let bad = || {
        Error::invalid_argument(format!(
            "window: `{window}` is not a relative time window; use minutes, hours or days such as \"15m\", \"2h\" or \"1d\""
        ))
    };
    let n: u32 = digits.parse().map_err(|_| bad())?;
    let minutes = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => n.div_ceil(60),
        "m" | "min" | "mins" | "minute" | "minutes" => n,
        "h" | "hr" | "hrs" | "hour" | "hours" => n.saturating_mul(60),
        "d" | "day" | "days" => n.saturating_mul(1440),
        _ => return Err(bad()),
    };
    if !(1..=1440).contains(&minutes) {
        return Err(Error::invalid_argument(format!(
            "window: `{window}` is outside 1m..24h"
        )));
    }
    Ok(minutes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit::status::StatusCode;

    #[test]
    fn windows_parse_in_every_spelling_and_bad_ones_name_the_field() {
        assert_eq!(parse_window("15m").ok(), Some(15));
        assert_eq!(parse_window("2h").ok(), Some(120));
        assert_eq!(parse_window(" 2 hours ").ok(), Some(120));
        assert_eq!(parse_window("1d").ok(), Some(1440));
        assert_eq!(parse_window("90s").ok(), Some(2));
        for bad in ["", "soon", "5y", "0m", "2d", "-3m"] {
            let e = parse_window(bad).expect_err(bad);
            assert_eq!(e.status(), StatusCode::InvalidArgument, "{bad}");
            assert!(e.message().starts_with("window:"), "{bad}: {}", e.message());
        }
    }

    #[test]
    fn a_restart_brings_a_service_back_and_logs_it() {
        let fleet = Fleet::default();
        assert!(!fleet.status(Service::Scheduler).online);
        assert_eq!(fleet.logs(Service::Scheduler, Level::Error, 60).len(), 1);
        assert_eq!(fleet.logs(Service::Scheduler, Level::Info, 60).len(), 3);
        assert_eq!(fleet.logs(Service::Scheduler, Level::Error, 5).len(), 0);
        let after = fleet.restart(Service::Scheduler);
        assert!(after.online, "{after:?}");
        assert!(after.summary.contains("healthy"));
        let info = fleet.logs(Service::Scheduler, Level::Info, 60);
        assert!(info[0].contains("restarted by ops-agent"), "{info:?}");
    }
}
