//! A small gRPC client for the Firestore calls the store makes
//! (`BatchGetDocuments`, `BeginTransaction`, `Commit`, `Rollback`,
//! `RunQuery`), over `tonic` with hand-declared messages.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use genkit_core::{Error, Result, StatusCode};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::proto::{
    BatchGetDocumentsRequest, BatchGetDocumentsResponse, BeginTransactionRequest,
    BeginTransactionResponse, CommitRequest, CommitResponse, Document, Empty, RollbackRequest,
    RunQueryRequest, RunQueryResponse, StructuredQuery, TransactionOptions, Write,
    batch_get_documents_response, transaction_options,
};

/// The production Firestore endpoint.
pub(crate) const FIRESTORE_ENDPOINT: &str = "https://firestore.googleapis.com";

/// Supplies OAuth 2 access tokens for real Firestore (scope
/// `https://www.googleapis.com/auth/datastore`), e.g. from the metadata
/// server, `gcloud auth print-access-token`, or a Google auth crate. Called
/// before every request, so it should cache and refresh the token itself.
#[async_trait]
pub trait TokenSource: Send + Sync + 'static {
    /// A currently valid access token (without the `Bearer ` prefix).
    async fn token(&self) -> Result<String>;
}

/// A fixed access token (tests, short-lived jobs).
#[derive(Clone)]
pub struct StaticToken(pub String);

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticToken(..)")
    }
}

#[async_trait]
impl TokenSource for StaticToken {
    async fn token(&self) -> Result<String> {
        Ok(self.0.clone())
    }
}

/// How requests authenticate.
#[derive(Clone)]
pub(crate) enum Auth {
    /// The emulator: `Authorization: Bearer owner`, as Google's clients send it.
    Emulator,
    /// Real Firestore with a caller's token source.
    Token(Arc<dyn TokenSource>),
}

/// One Firestore database over one gRPC channel.
#[derive(Clone)]
pub(crate) struct Client {
    channel: Channel,
    auth: Auth,
    /// `projects/{project}/databases/{database}`.
    database: String,
    routing: MetadataValue<tonic::metadata::Ascii>,
    resource_prefix: MetadataValue<tonic::metadata::Ascii>,
}

fn transport_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(StatusCode::Unavailable, format!("Firestore {what}: {e}"))
}

impl Client {
    /// A lazily connecting client: plaintext to `emulator_host`
    /// (`host:port`), else TLS to Firestore.
    pub(crate) fn new(
        emulator_host: Option<&str>,
        auth: Auth,
        database: String,
        timeout: Duration,
    ) -> Result<Self> {
        let endpoint = match emulator_host {
            Some(host) => Endpoint::from_shared(format!("http://{host}")).map_err(|e| {
                Error::invalid_argument(format!("FIRESTORE_EMULATOR_HOST {host:?}: {e}"))
                    .with_source(e)
            })?,
            None => Endpoint::from_static(FIRESTORE_ENDPOINT)
                .tls_config(ClientTlsConfig::new().with_webpki_roots())
                .map_err(|e| transport_error("TLS setup", e))?,
        };
        let channel = endpoint
            .connect_timeout(timeout)
            .timeout(timeout)
            .connect_lazy();
        let encoded: String = database
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let header = |v: String| {
            MetadataValue::try_from(v).map_err(|e| {
                Error::invalid_argument(format!("database name {database:?}: {e}")).with_source(e)
            })
        };
        Ok(Self {
            channel,
            routing: header(format!("database={encoded}"))?,
            resource_prefix: header(database.clone())?,
            auth,
            database,
        })
    }

    /// Whether this talks to an emulator.
    pub(crate) fn is_emulator(&self) -> bool {
        matches!(self.auth, Auth::Emulator)
    }

    /// `projects/{project}/databases/{database}`.
    pub(crate) fn database(&self) -> &str {
        &self.database
    }

    async fn request<T>(&self, message: T) -> Result<tonic::Request<T>> {
        let mut request = tonic::Request::new(message);
        let token = match &self.auth {
            Auth::Emulator => "owner".to_owned(),
            Auth::Token(source) => source.token().await?,
        };
        let bearer = MetadataValue::try_from(format!("Bearer {token}")).map_err(|_| {
            Error::new(
                StatusCode::Unauthenticated,
                "the access token is not a valid header value",
            )
        })?;
        let md = request.metadata_mut();
        md.insert("authorization", bearer);
        md.insert("x-goog-request-params", self.routing.clone());
        md.insert("google-cloud-resource-prefix", self.resource_prefix.clone());
        Ok(request)
    }

    async fn grpc(&self) -> Result<tonic::client::Grpc<Channel>> {
        let mut grpc = tonic::client::Grpc::new(self.channel.clone());
        grpc.ready()
            .await
            .map_err(|e| transport_error("connection", e))?;
        Ok(grpc)
    }

    async fn unary<Req, Resp>(&self, method: &'static str, message: Req) -> Result<Resp>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let request = self.request(message).await?;
        let mut grpc = self.grpc().await?;
        let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
        grpc.unary(request, PathAndQuery::from_static(method), codec)
            .await
            .map(tonic::Response::into_inner)
            .map_err(status_error)
    }

    async fn streaming<Req, Resp>(&self, method: &'static str, message: Req) -> Result<Vec<Resp>>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let request = self.request(message).await?;
        let mut grpc = self.grpc().await?;
        let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
        let mut stream = grpc
            .server_streaming(request, PathAndQuery::from_static(method), codec)
            .await
            .map_err(status_error)?
            .into_inner();
        let mut out = Vec::new();
        while let Some(item) = stream.message().await.map_err(status_error)? {
            out.push(item);
        }
        Ok(out)
    }

    /// Starts a transaction (read-write unless `read_only`).
    pub(crate) async fn begin(&self, read_only: bool) -> Result<Vec<u8>> {
        let mode = if read_only {
            transaction_options::Mode::ReadOnly(transaction_options::ReadOnly {})
        } else {
            transaction_options::Mode::ReadWrite(transaction_options::ReadWrite::default())
        };
        let resp: BeginTransactionResponse = self
            .unary(
                "/google.firestore.v1.Firestore/BeginTransaction",
                BeginTransactionRequest {
                    database: self.database.clone(),
                    options: Some(TransactionOptions { mode: Some(mode) }),
                },
            )
            .await?;
        Ok(resp.transaction)
    }

    /// The documents of `names` that exist, as `(name, document)` in no
    /// particular order.
    pub(crate) async fn batch_get(
        &self,
        names: Vec<String>,
        transaction: Option<&[u8]>,
    ) -> Result<Vec<Document>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let responses: Vec<BatchGetDocumentsResponse> = self
            .streaming(
                "/google.firestore.v1.Firestore/BatchGetDocuments",
                BatchGetDocumentsRequest {
                    database: self.database.clone(),
                    documents: names,
                    transaction: transaction.map(<[u8]>::to_vec),
                },
            )
            .await?;
        Ok(responses
            .into_iter()
            .filter_map(|r| match r.result {
                Some(batch_get_documents_response::Result::Found(doc)) => Some(doc),
                _ => None,
            })
            .collect())
    }

    /// Runs a query under `parent` (a document path, or the documents root).
    pub(crate) async fn run_query(
        &self,
        parent: String,
        query: StructuredQuery,
        transaction: Option<&[u8]>,
    ) -> Result<Vec<Document>> {
        let responses: Vec<RunQueryResponse> = self
            .streaming(
                "/google.firestore.v1.Firestore/RunQuery",
                RunQueryRequest {
                    parent,
                    structured_query: Some(query),
                    transaction: transaction.map(<[u8]>::to_vec),
                },
            )
            .await?;
        Ok(responses.into_iter().filter_map(|r| r.document).collect())
    }

    /// Applies `writes` atomically (within `transaction`, if any).
    pub(crate) async fn commit(
        &self,
        writes: Vec<Write>,
        transaction: Option<Vec<u8>>,
    ) -> Result<CommitResponse> {
        self.unary(
            "/google.firestore.v1.Firestore/Commit",
            CommitRequest {
                database: self.database.clone(),
                writes,
                transaction: transaction.unwrap_or_default(),
            },
        )
        .await
    }

    /// Abandons a transaction; failures are only logged (the server drops
    /// idle transactions anyway).
    pub(crate) async fn rollback(&self, transaction: Vec<u8>) {
        let r: Result<Empty> = self
            .unary(
                "/google.firestore.v1.Firestore/Rollback",
                RollbackRequest {
                    database: self.database.clone(),
                    transaction,
                },
            )
            .await;
        if let Err(e) = r {
            tracing::debug!("Firestore rollback failed: {e}");
        }
    }
}

/// A gRPC status as a Genkit error with the same code.
fn status_error(status: tonic::Status) -> Error {
    let code = StatusCode::from_code(status.code() as u16).unwrap_or(StatusCode::Unknown);
    Error::new(code, format!("Firestore: {}", status.message()))
}
