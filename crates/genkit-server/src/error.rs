//! Errors of the serving and tooling layer itself (binding, files). Errors of
//! the actions being served are [`genkit_core::Error`]s and travel to clients
//! in the protocols' own error bodies.

use std::io;
use std::path::PathBuf;

/// A failure to start or run a server, or to write the runtime file.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No address could be bound.
    #[error("could not bind {what}: {source}")]
    Bind {
        /// What was being bound (e.g. `127.0.0.1:3400`).
        what: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Serving failed.
    #[error("server failed: {0}")]
    Serve(#[source] io::Error),
    /// The runtime file could not be written.
    #[error("could not write the runtime file {path}: {source}")]
    RuntimeFile {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A configuration value (usually from the environment) is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Listing or looking up the actions to serve failed.
    #[error(transparent)]
    Genkit(#[from] genkit_core::Error),
}
