//! The local vector store's data file: records survive a reopen with their
//! metadata, a torn last append (a crash) is cut off without touching
//! earlier records, damage in the middle and foreign files are refused
//! with the file named, two handles on one file never interleave writes
//! and see each other's records.

use crate::local_vector_store::{NAME, setup, temp_dir, texts};
use genkit_core::StatusCode;
use genkit_model::types::DocumentData;
use genkit_retrieval::indexer::{IndexOptions, index};
use genkit_retrieval::retriever::{RetrieveOptions, retrieve};
use serde_json::json;
use std::path::Path;

async fn all(registry: &genkit_core::Registry) -> Vec<String> {
    let mut found = texts(
        &retrieve(
            registry,
            RetrieveOptions::new(NAME, "abc").options(json!({"k": 1000})),
        )
        .await
        .expect("retrieved"),
    );
    found.sort();
    found
}

async fn add(registry: &genkit_core::Registry, words: &[&str]) {
    index(
        registry,
        IndexOptions::new(NAME, words.iter().map(|w| DocumentData::from_text(*w))),
    )
    .await
    .expect("indexed");
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).expect("data file").len()
}

#[tokio::test]
async fn records_round_trip_with_their_metadata_across_reopens() {
    let dir = temp_dir("roundtrip");
    let path = dir.join("facts.json");
    let registry = setup(&path);
    let doc = DocumentData::from_text("metadata kept")
        .with_metadata(serde_json::Map::from_iter([("page".into(), json!(7))]));
    index(&registry, IndexOptions::new(NAME, [doc.clone()]))
        .await
        .expect("indexed");
    add(&registry, &["apple", "banana"]).await;
    add(&registry, &["cherry"]).await;
    for _ in 0..2 {
        let again = setup(&path);
        assert_eq!(
            all(&again).await,
            ["apple", "banana", "cherry", "metadata kept"]
        );
        let top = retrieve(
            &again,
            RetrieveOptions::new(NAME, "metadata kept").options(json!({"k": 1})),
        )
        .await
        .expect("retrieved");
        assert_eq!(top, std::slice::from_ref(&doc));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_torn_last_append_is_cut_off_and_earlier_records_kept() {
    let dir = temp_dir("torn");
    let path = dir.join("facts.json");
    let data = path.with_extension("vdb");
    let registry = setup(&path);
    add(&registry, &["apple", "banana"]).await;
    let first = len(&data);
    add(&registry, &["cherry", "damson"]).await;
    let second = len(&data);
    let whole = std::fs::read(&data).expect("data");

    // The crash cut the second append short...
    std::fs::write(&data, &whole[..(first + (second - first) / 2) as usize]).expect("written");
    let again = setup(&path);
    assert_eq!(all(&again).await, ["apple", "banana"]);
    assert_eq!(len(&data), first, "torn tail removed");
    add(&again, &["elder"]).await;
    assert_eq!(all(&setup(&path)).await, ["apple", "banana", "elder"]);

    // ...or the file grew but the append's bytes never reached the disk.
    let mut zeroed = whole.clone();
    for b in &mut zeroed[first as usize + 20..] {
        *b = 0;
    }
    std::fs::write(&data, &zeroed).expect("written");
    assert_eq!(all(&setup(&path)).await, ["apple", "banana"]);
    assert_eq!(len(&data), first);

    // Only the header made it.
    std::fs::write(&data, &whole[..5]).expect("written");
    assert!(all(&setup(&path)).await.is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn damage_before_the_last_append_is_refused_naming_the_file() {
    let dir = temp_dir("damaged");
    let path = dir.join("facts.json");
    let data = path.with_extension("vdb");
    let registry = setup(&path);
    add(&registry, &["apple", "banana"]).await;
    add(&registry, &["cherry"]).await;
    let mut bytes = std::fs::read(&data).expect("data");
    bytes[30] ^= 0x55; // inside the first frame
    std::fs::write(&data, &bytes).expect("written");
    let again = setup(&path);
    let err = retrieve(&again, RetrieveOptions::new(NAME, "x"))
        .await
        .expect_err("refused");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert!(
        err.message().contains("is damaged at byte 8"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains(&data.display().to_string()),
        "{}",
        err.message()
    );
    let err = index(
        &again,
        IndexOptions::new(NAME, [DocumentData::from_text("more")]),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert_eq!(std::fs::read(&data).expect("data"), bytes, "left alone");

    // A file that is not a store at all.
    std::fs::write(&data, b"some other program's file").expect("written");
    let err = retrieve(&setup(&path), RetrieveOptions::new(NAME, "x"))
        .await
        .expect_err("refused");
    assert!(
        err.message().contains("is not a store file")
            && err.message().contains(&data.display().to_string()),
        "{}",
        err.message()
    );
    assert_eq!(
        std::fs::read(&data).expect("data"),
        b"some other program's file"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Two handles on one file (as two processes would have: each opens the
/// file itself, and the lock is per open file) index at the same time;
/// every record lands once, whole, and each handle sees the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handles_on_one_file_do_not_interleave_writes() {
    let dir = temp_dir("two");
    let path = dir.join("facts.json");
    let (a, b) = (setup(&path), setup(&path));
    let words = |side: &str| -> Vec<String> { (0..20).map(|i| format!("{side}{i}")).collect() };
    let (wa, wb) = (words("alpha"), words("beta"));
    let write = |registry: genkit_core::Registry, words: Vec<String>| {
        tokio::spawn(async move {
            for pair in words.chunks(2) {
                index(
                    &registry,
                    IndexOptions::new(NAME, pair.iter().map(DocumentData::from_text)),
                )
                .await
                .expect("indexed");
            }
        })
    };
    let (ra, rb) = tokio::join!(write(a.clone(), wa.clone()), write(b.clone(), wb.clone()));
    ra.expect("a");
    rb.expect("b");
    // The same document through the other handle is not stored twice.
    add(&b, &["alpha0"]).await;
    let mut expected: Vec<String> = wa.into_iter().chain(wb).collect();
    expected.sort();
    assert_eq!(all(&a).await, expected);
    assert_eq!(all(&b).await, expected);
    assert_eq!(all(&setup(&path)).await, expected);
    let _ = std::fs::remove_dir_all(dir);
}

/// A JSON store (Genkit JS's layout) at the configured path is imported
/// into the data file on first use; the JSON file is left as it was.
#[tokio::test]
async fn a_json_store_is_imported_once() {
    let dir = temp_dir("legacy");
    let path = dir.join("facts.json");
    let json = json!({
        "a1": {"doc": {"content": [{"text": "aaaa"}]}, "embedding": {"embedding": [4.0, 0.0, 0.0]}},
        "b1": {"doc": {"content": [{"text": "bbbb"}], "metadata": {"n": 2}},
               "embedding": {"embedding": [0.0, 4.0, 0.0], "metadata": {"part": 1}}},
    })
    .to_string();
    std::fs::write(&path, &json).expect("written");
    // A three-letter alphabet: the letter embedder with 26 dimensions
    // would not match, so the store's dimensions come from the file.
    let registry = setup(&path);
    let err = retrieve(&registry, RetrieveOptions::new(NAME, "a"))
        .await
        .expect_err("26 dimensions against 3");
    assert!(err.message().contains("dimensions"), "{}", err.message());
    assert_eq!(std::fs::read_to_string(&path).expect("json"), json);
    std::fs::remove_file(&path).expect("removed");
    // Imported: the data file holds both entries, not the JSON file.
    let data = std::fs::read(path.with_extension("vdb")).expect("data");
    let text = String::from_utf8_lossy(&data);
    assert!(text.contains("\"aaaa\"") && text.contains("\"bbbb\""));
    assert!(text.contains("\"part\":1"), "embedding metadata kept");
    let _ = std::fs::remove_dir_all(dir);
}
