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
    /// A span exporter could not be built.
    #[error("could not build the {what} exporter: {source}")]
    Exporter {
        /// Which exporter, e.g. `OTLP`.
        what: &'static str,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Listing or looking up the actions to serve failed.
    #[error(transparent)]
    Genkit(#[from] genkit_core::Error),
}

impl From<ServerError> for genkit_core::Error {
    /// Lets an app use `?` on serving calls in a function returning
    /// `genkit::Result`: a wrapped Genkit error comes back as it was; the
    /// others keep the server error as their source.
    fn from(e: ServerError) -> Self {
        use genkit_core::StatusCode;
        let status = match e {
            ServerError::Genkit(inner) => return inner,
            ServerError::Bind { .. } => StatusCode::Unavailable,
            ServerError::Config(_) => StatusCode::InvalidArgument,
            ServerError::Serve(_)
            | ServerError::RuntimeFile { .. }
            | ServerError::Exporter { .. } => StatusCode::Internal,
        };
        genkit_core::Error::from_source(status, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_core::StatusCode;

    fn app() -> genkit_core::Result<()> {
        Err(ServerError::Config("PORT is not a number".into()))?
    }

    #[test]
    fn server_errors_convert_with_a_status_and_their_source() {
        let e = app().unwrap_err();
        assert_eq!(e.status(), StatusCode::InvalidArgument);
        assert!(e.message().contains("PORT is not a number"));
        assert!(std::error::Error::source(&e).is_some());

        let bind = genkit_core::Error::from(ServerError::Bind {
            what: "127.0.0.1:1".into(),
            source: io::Error::from(io::ErrorKind::AddrInUse),
        });
        assert_eq!(bind.status(), StatusCode::Unavailable);

        let inner = genkit_core::Error::not_found("no such flow");
        let back = genkit_core::Error::from(ServerError::Genkit(inner));
        assert_eq!(back.status(), StatusCode::NotFound);
        assert_eq!(back.message(), "no such flow");
    }
}
