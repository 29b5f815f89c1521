//! The subset of `google.firestore.v1` this store speaks, declared by hand
//! with `prost` (field numbers as in googleapis' `google/firestore/v1/*.proto`)
//! so the crate needs neither `protoc` nor a generated googleapis crate.

#![allow(missing_docs)] // wire messages: their fields are documented upstream

use std::collections::HashMap;

/// `google.protobuf.Timestamp`.
#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct Timestamp {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// `google.protobuf.Empty`.
#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct Empty {}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(map = "string, message", tag = "2")]
    pub fields: HashMap<String, Value>,
    #[prost(message, optional, tag = "3")]
    pub create_time: Option<Timestamp>,
    #[prost(message, optional, tag = "4")]
    pub update_time: Option<Timestamp>,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Value {
    #[prost(oneof = "value::Kind", tags = "11, 1, 2, 3, 10, 17, 18, 5, 8, 9, 6")]
    pub kind: Option<value::Kind>,
}

pub mod value {
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Kind {
        /// `google.protobuf.NullValue` (always 0).
        #[prost(int32, tag = "11")]
        NullValue(i32),
        #[prost(bool, tag = "1")]
        BooleanValue(bool),
        #[prost(int64, tag = "2")]
        IntegerValue(i64),
        #[prost(double, tag = "3")]
        DoubleValue(f64),
        #[prost(message, tag = "10")]
        TimestampValue(super::Timestamp),
        #[prost(string, tag = "17")]
        StringValue(String),
        #[prost(bytes = "vec", tag = "18")]
        BytesValue(Vec<u8>),
        #[prost(string, tag = "5")]
        ReferenceValue(String),
        #[prost(message, tag = "8")]
        GeoPointValue(super::LatLng),
        #[prost(message, tag = "9")]
        ArrayValue(super::ArrayValue),
        #[prost(message, tag = "6")]
        MapValue(super::MapValue),
    }
}

/// `google.type.LatLng`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct LatLng {
    #[prost(double, tag = "1")]
    pub latitude: f64,
    #[prost(double, tag = "2")]
    pub longitude: f64,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Value>,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct MapValue {
    #[prost(map = "string, message", tag = "1")]
    pub fields: HashMap<String, Value>,
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct TransactionOptions {
    #[prost(oneof = "transaction_options::Mode", tags = "2, 3")]
    pub mode: Option<transaction_options::Mode>,
}

pub mod transaction_options {
    #[derive(Clone, PartialEq, Eq, ::prost::Message)]
    pub struct ReadOnly {}
    #[derive(Clone, PartialEq, Eq, ::prost::Message)]
    pub struct ReadWrite {
        #[prost(bytes = "vec", tag = "1")]
        pub retry_transaction: Vec<u8>,
    }
    #[derive(Clone, PartialEq, Eq, ::prost::Oneof)]
    pub enum Mode {
        #[prost(message, tag = "2")]
        ReadOnly(ReadOnly),
        #[prost(message, tag = "3")]
        ReadWrite(ReadWrite),
    }
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct BatchGetDocumentsRequest {
    #[prost(string, tag = "1")]
    pub database: String,
    #[prost(string, repeated, tag = "2")]
    pub documents: Vec<String>,
    #[prost(bytes = "vec", optional, tag = "4")]
    pub transaction: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct BatchGetDocumentsResponse {
    #[prost(oneof = "batch_get_documents_response::Result", tags = "1, 2")]
    pub result: Option<batch_get_documents_response::Result>,
    #[prost(bytes = "vec", tag = "3")]
    pub transaction: Vec<u8>,
    #[prost(message, optional, tag = "4")]
    pub read_time: Option<Timestamp>,
}

pub mod batch_get_documents_response {
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Result {
        #[prost(message, tag = "1")]
        Found(super::Document),
        #[prost(string, tag = "2")]
        Missing(String),
    }
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct BeginTransactionRequest {
    #[prost(string, tag = "1")]
    pub database: String,
    #[prost(message, optional, tag = "2")]
    pub options: Option<TransactionOptions>,
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct BeginTransactionResponse {
    #[prost(bytes = "vec", tag = "1")]
    pub transaction: Vec<u8>,
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct Precondition {
    #[prost(oneof = "precondition::Condition", tags = "1, 2")]
    pub condition: Option<precondition::Condition>,
}

pub mod precondition {
    #[derive(Clone, PartialEq, Eq, ::prost::Oneof)]
    pub enum Condition {
        #[prost(bool, tag = "1")]
        Exists(bool),
        #[prost(message, tag = "2")]
        UpdateTime(super::Timestamp),
    }
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Write {
    #[prost(oneof = "write::Operation", tags = "1, 2")]
    pub operation: Option<write::Operation>,
    #[prost(message, optional, tag = "3")]
    pub update_mask: Option<DocumentMask>,
    #[prost(message, optional, tag = "4")]
    pub current_document: Option<Precondition>,
    #[prost(message, repeated, tag = "7")]
    pub update_transforms: Vec<FieldTransform>,
}

/// `google.firestore.v1.DocumentMask`.
#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct DocumentMask {
    #[prost(string, repeated, tag = "1")]
    pub field_paths: Vec<String>,
}

/// `ServerValue.REQUEST_TIME`: the commit's time.
pub const SERVER_VALUE_REQUEST_TIME: i32 = 1;

/// `google.firestore.v1.DocumentTransform.FieldTransform` (the transforms
/// this crate uses).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct FieldTransform {
    #[prost(string, tag = "1")]
    pub field_path: String,
    #[prost(oneof = "field_transform::TransformType", tags = "2, 6")]
    pub transform_type: Option<field_transform::TransformType>,
}

pub mod field_transform {
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum TransformType {
        /// A `ServerValue` (`FieldValue.serverTimestamp()`).
        #[prost(int32, tag = "2")]
        SetToServerValue(i32),
        /// `FieldValue.arrayUnion(...)`.
        #[prost(message, tag = "6")]
        AppendMissingElements(super::ArrayValue),
    }
}

pub mod write {
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Operation {
        #[prost(message, tag = "1")]
        Update(super::Document),
        #[prost(string, tag = "2")]
        Delete(String),
    }
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct CommitRequest {
    #[prost(string, tag = "1")]
    pub database: String,
    #[prost(message, repeated, tag = "2")]
    pub writes: Vec<Write>,
    #[prost(bytes = "vec", tag = "3")]
    pub transaction: Vec<u8>,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct WriteResult {
    #[prost(message, optional, tag = "1")]
    pub update_time: Option<Timestamp>,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct CommitResponse {
    #[prost(message, repeated, tag = "1")]
    pub write_results: Vec<WriteResult>,
    #[prost(message, optional, tag = "2")]
    pub commit_time: Option<Timestamp>,
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct RollbackRequest {
    #[prost(string, tag = "1")]
    pub database: String,
    #[prost(bytes = "vec", tag = "2")]
    pub transaction: Vec<u8>,
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct FieldReference {
    #[prost(string, tag = "2")]
    pub field_path: String,
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct Projection {
    #[prost(message, repeated, tag = "2")]
    pub fields: Vec<FieldReference>,
}

#[derive(Clone, PartialEq, Eq, ::prost::Message)]
pub struct CollectionSelector {
    #[prost(string, tag = "2")]
    pub collection_id: String,
    #[prost(bool, tag = "3")]
    pub all_descendants: bool,
}

/// `StructuredQuery.FieldFilter.Operator.EQUAL`.
pub const OPERATOR_EQUAL: i32 = 5;

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct FieldFilter {
    #[prost(message, optional, tag = "1")]
    pub field: Option<FieldReference>,
    #[prost(int32, tag = "2")]
    pub op: i32,
    #[prost(message, optional, tag = "3")]
    pub value: Option<Value>,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Filter {
    #[prost(oneof = "filter::FilterType", tags = "2")]
    pub filter_type: Option<filter::FilterType>,
}

pub mod filter {
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum FilterType {
        #[prost(message, tag = "2")]
        FieldFilter(super::FieldFilter),
    }
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct StructuredQuery {
    #[prost(message, optional, tag = "1")]
    pub select: Option<Projection>,
    #[prost(message, repeated, tag = "2")]
    pub from: Vec<CollectionSelector>,
    #[prost(message, optional, tag = "3")]
    pub r#where: Option<Filter>,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RunQueryRequest {
    #[prost(string, tag = "1")]
    pub parent: String,
    #[prost(message, optional, tag = "2")]
    pub structured_query: Option<StructuredQuery>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub transaction: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RunQueryResponse {
    #[prost(message, optional, tag = "1")]
    pub document: Option<Document>,
    #[prost(bytes = "vec", tag = "2")]
    pub transaction: Vec<u8>,
    #[prost(message, optional, tag = "3")]
    pub read_time: Option<Timestamp>,
    #[prost(int32, tag = "4")]
    pub skipped_results: i32,
}
