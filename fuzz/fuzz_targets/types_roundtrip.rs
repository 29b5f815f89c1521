//! Genkit's wire types read from any JSON: what reads must serialize, read
//! back equal, and serialize to the same text again. The first byte picks
//! the type.
#![no_main]

use genkit_fuzz::assert_round_trip;
use genkit_model::types::{
    GenerateRequest, GenerateResponse, GenerateResponseChunk, Message, Part,
};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

fn check<T: Serialize + DeserializeOwned + PartialEq + Debug>(json: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<T>(json) {
        assert_round_trip(&value);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, json)) = data.split_first() else {
        return;
    };
    match which % 5 {
        0 => check::<Part>(json),
        1 => check::<GenerateRequest>(json),
        2 => check::<GenerateResponse>(json),
        3 => check::<Message>(json),
        _ => check::<GenerateResponseChunk>(json),
    }
});
