//! PostgreSQL with the pgvector extension as a Genkit vector store: an
//! indexer and a retriever (`pgvector/<index>`) over any registered
//! embedder.
//!
//! Each document is stored whole (Genkit's `Document` JSON, as `jsonb`)
//! beside its embedding (an unsized `vector`), keyed by a hash of its JSON,
//! so indexing the same document twice stores it once. Queries rank by
//! cosine distance (`<=>`), return `k` documents (3 by default) and may
//! keep only documents whose metadata contains a JSON object (`filter`,
//! jsonb `@>`). The table and the extension are created on first use.

use genkit_core::action::ActionCtx;
use genkit_core::{Error, Registry, Result, StatusCode};
use genkit_model::types::DocumentData;
use genkit_retrieval::indexer::Indexer;
use genkit_retrieval::retriever::Retriever;
use genkit_retrieval::vector_store::{
    StoreEmbedder, VectorStore, define_vector_store, document_key,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::PgPool;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The plugin name the actions are registered under.
pub const PLUGIN_NAME: &str = "pgvector";

/// How many documents a query returns unless its options say `k`.
pub const DEFAULT_K: u32 = 3;

/// How to define a pgvector store.
#[derive(Debug, Clone)]
pub struct PgVectorOptions {
    index_name: String,
    embedder: String,
    embedder_options: Option<Value>,
    table: Option<String>,
    pool: PgPool,
}

impl PgVectorOptions {
    /// A store named `index_name` on `pool`, whose documents and queries the
    /// embedder `embedder` embeds.
    pub fn new(index_name: impl Into<String>, embedder: impl Into<String>, pool: PgPool) -> Self {
        Self {
            index_name: index_name.into(),
            embedder: embedder.into(),
            embedder_options: None,
            table: None,
            pool,
        }
    }

    /// Options passed to the embedder.
    pub fn embedder_options(mut self, options: Value) -> Self {
        self.embedder_options = Some(options);
        self
    }

    /// The table (default `genkit_<index>`): letters, digits and `_`, not
    /// starting with a digit.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = Some(table.into());
        self
    }

    fn table_name(&self) -> Result<String> {
        let name = self
            .table
            .clone()
            .unwrap_or_else(|| format!("genkit_{}", self.index_name));
        let valid = name.len() <= 63
            && name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            Ok(name)
        } else {
            Err(Error::invalid_argument(format!(
                "pgvector table name {name:?}: use letters, digits and '_' (at most 63, not starting with a digit), or set one with PgVectorOptions::table"
            )))
        }
    }
}

/// The retriever's options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PgVectorRetrieverOptions {
    /// Number of documents to retrieve (3 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
    /// Only documents whose metadata contains this object (jsonb `@>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Map<String, Value>>,
}

/// A pgvector store's indexer and retriever.
#[derive(Debug, Clone)]
pub struct PgVectorStore {
    /// `/indexer/pgvector/<index>`.
    pub indexer: Indexer,
    /// `/retriever/pgvector/<index>`, options `{k, filter}`.
    pub retriever: Retriever<PgVectorRetrieverOptions>,
}

/// Defines a pgvector store: registers the indexer and the retriever
/// `pgvector/<index>`. Nothing is sent to the database until first use.
pub fn define_pgvector_store(registry: &Registry, opts: PgVectorOptions) -> Result<PgVectorStore> {
    let shared = Arc::new(Shared {
        table: opts.table_name()?,
        opts,
        ready: OnceCell::new(),
    });
    let actions = define_vector_store(
        registry,
        PLUGIN_NAME,
        &shared.opts.index_name,
        format!("pgvector retriever - {}", shared.table),
        shared.clone(),
    )?;
    Ok(PgVectorStore {
        indexer: actions.indexer,
        retriever: actions.retriever,
    })
}

struct Shared {
    opts: PgVectorOptions,
    table: String,
    ready: OnceCell<()>,
}

/// A database error as a status: bad data (SQLSTATE class 22, such as a
/// vector of another length) is `FAILED_PRECONDITION`, an unreachable server
/// or an exhausted pool `UNAVAILABLE`, anything else `INTERNAL`.
fn db(e: sqlx::Error, doing: &str) -> Error {
    let status = match &e {
        sqlx::Error::Database(d) if d.code().is_some_and(|c| c.starts_with("22")) => {
            StatusCode::FailedPrecondition
        }
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => {
            StatusCode::Unavailable
        }
        sqlx::Error::Database(d) if d.code().is_some_and(|c| c.starts_with("08")) => {
            StatusCode::Unavailable
        }
        _ => StatusCode::Internal,
    };
    let message = match &e {
        sqlx::Error::Database(d) => d.message().to_owned(),
        other => other.to_string(),
    };
    Error::new(status, format!("pgvector: {doing}: {message}"))
}

/// pgvector's text form, `[1,2.5,...]`; non-finite values are refused
/// (pgvector stores none).
fn vector_text(v: &[f32]) -> Result<String> {
    if let Some(x) = v.iter().find(|x| !x.is_finite()) {
        return Err(Error::failed_precondition(format!(
            "pgvector: the embedding holds {x}, and pgvector stores only finite values"
        )));
    }
    let parts: Vec<String> = v.iter().map(f32::to_string).collect();
    Ok(format!("[{}]", parts.join(",")))
}

/// The advisory lock key the setup holds (any fixed number: "gkpgvect").
const SETUP_LOCK: i64 = 0x676b_7067_7665_6374;

impl Shared {
    /// Creates the extension and the table once per process.
    async fn ready(&self) -> Result<()> {
        self.ready
            .get_or_try_init(|| async {
                // Two sessions running `CREATE ... IF NOT EXISTS` at once
                // can both pass the check and one then fails on a unique
                // index of the catalog: processes (and stores) starting
                // together set up one at a time, under an advisory lock held
                // until the transaction ends.
                let mut tx = self
                    .opts
                    .pool
                    .begin()
                    .await
                    .map_err(|e| db(e, "starting the setup transaction"))?;
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(SETUP_LOCK)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db(e, "waiting for the setup lock"))?;
                sqlx::query("CREATE EXTENSION IF NOT EXISTS vector")
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| {
                        db(
                            e,
                            "enabling the pgvector extension (CREATE EXTENSION vector; is pgvector installed on the server?)",
                        )
                    })?;
                let sql = format!(
                    "CREATE TABLE IF NOT EXISTS \"{}\" (id text PRIMARY KEY, doc jsonb NOT NULL, embedding vector NOT NULL)",
                    self.table
                );
                sqlx::query(&sql)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db(e, &format!("creating table {}", self.table)))?;
                tx.commit()
                    .await
                    .map_err(|e| db(e, "committing the setup"))?;
                Ok(())
            })
            .await
            .map(|_| ())
    }

    fn embedder(&self) -> StoreEmbedder<'_> {
        StoreEmbedder {
            embedder: &self.opts.embedder,
            options: self.opts.embedder_options.as_ref(),
        }
    }

    /// Embeds and stores `docs` in one statement (documents already stored
    /// are skipped); vectors of another length than the table's are
    /// refused before anything is written.
    async fn embed_and_store(&self, ctx: &ActionCtx, docs: Vec<DocumentData>) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let rows = self.embedder().documents(ctx, docs).await?;
        self.ready().await?;
        let pool = &self.opts.pool;
        let existing: Option<(i32,)> = sqlx::query_as(&format!(
            "SELECT vector_dims(embedding) FROM \"{}\" LIMIT 1",
            self.table
        ))
        .fetch_optional(pool)
        .await
        .map_err(|e| db(e, "reading the table's vector length"))?;
        let mut dims = existing.and_then(|(d,)| usize::try_from(d).ok());
        let (mut ids, mut jsons, mut vectors) = (Vec::new(), Vec::new(), Vec::new());
        for (doc, embedding) in rows {
            let len = embedding.embedding.len();
            if let Some(d) = dims
                && d != len
            {
                return Err(Error::failed_precondition(format!(
                    "pgvector: the embedder returned {len} dimensions, the table {}'s vectors have {d}",
                    self.table
                )));
            }
            dims = Some(len);
            let json = serde_json::to_string(&doc)?;
            ids.push(document_key(json.as_bytes()));
            jsons.push(json);
            vectors.push(vector_text(&embedding.embedding)?);
        }
        let sql = format!(
            "INSERT INTO \"{}\" (id, doc, embedding) \
             SELECT * FROM UNNEST($1::text[], $2::text[]::jsonb[], $3::text[]::vector[]) \
             ON CONFLICT (id) DO NOTHING",
            self.table
        );
        sqlx::query(&sql)
            .bind(ids)
            .bind(jsons)
            .bind(vectors)
            .execute(pool)
            .await
            .map_err(|e| db(e, "storing documents"))?;
        Ok(())
    }

    /// The stored documents nearest to `query` that `options` keep.
    async fn nearest(
        &self,
        ctx: &ActionCtx,
        query: DocumentData,
        options: PgVectorRetrieverOptions,
    ) -> Result<Vec<DocumentData>> {
        let k = options.k.unwrap_or(DEFAULT_K);
        if k == 0 {
            return Ok(Vec::new());
        }
        let first = self.embedder().query(ctx, query).await?;
        let vector = vector_text(&first.embedding)?;
        let filter = options
            .filter
            .map(|f| serde_json::to_string(&Value::Object(f)))
            .transpose()?;
        self.ready().await?;
        let sql = format!(
            "SELECT doc::text FROM \"{}\" \
             WHERE ($2::jsonb IS NULL OR doc->'metadata' @> $2::jsonb) \
             ORDER BY embedding <=> $1::vector, id LIMIT $3",
            self.table
        );
        let rows: Vec<(String,)> = sqlx::query_as(&sql)
            .bind(vector)
            .bind(filter)
            .bind(i64::from(k))
            .fetch_all(&self.opts.pool)
            .await
            .map_err(|e| db(e, "searching"))?;
        rows.into_iter()
            .map(|(json,)| {
                serde_json::from_str(&json).map_err(|e| {
                    Error::new(
                        StatusCode::DataLoss,
                        format!("pgvector: a row of {} is not a document: {e}", self.table),
                    )
                    .with_source(e)
                })
            })
            .collect()
    }
}

impl VectorStore for Shared {
    type RetrieverOptions = PgVectorRetrieverOptions;

    async fn index(&self, ctx: &ActionCtx, documents: Vec<DocumentData>) -> Result<()> {
        self.embed_and_store(ctx, documents).await
    }

    async fn retrieve(
        &self,
        ctx: &ActionCtx,
        query: DocumentData,
        options: Option<PgVectorRetrieverOptions>,
    ) -> Result<Vec<DocumentData>> {
        self.nearest(ctx, query, options.unwrap_or_default()).await
    }
}
