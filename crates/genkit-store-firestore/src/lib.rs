//! A Firestore session store for Genkit agents.
mod client;
mod layout;
pub mod proto;
mod store;
mod value;

pub use client::{StaticToken, TokenSource};
pub use store::{
    DEFAULT_CHECKPOINT_INTERVAL, DEFAULT_COLLECTION, DEFAULT_PREFIX, DEFAULT_SHARD_SIZE,
    FirestoreSessionStore, FirestoreSessionStoreBuilder,
};
