//! The filesystem middleware's confinement, by property: hostile paths
//! (`..`, absolute, backslashes, `%2e`, NUL, overlong names) through a tree
//! with symlinks out of the root, link chains and dangling links never
//! resolve outside the root, and the write tools never touch anything
//! outside it.

use genkit_core::DynAction;
use genkit_middleware::filesystem::{ACCESS_DENIED, Root};
use genkit_middleware::{FilesystemOptions, filesystem};
use genkit_model::middleware::GenerateMiddleware;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `<tmp>/root` is the root; `<tmp>/outside` holds a secret; links inside
/// the root point out (directly, absolutely, through chains), in, or
/// nowhere.
struct Tree {
    _dir: tempfile::TempDir,
    parent: PathBuf,
    root: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().canonicalize().unwrap();
    let root = parent.join("root");
    let outside = parent.join("outside");
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::fs::write(root.join("src/a.txt"), "a").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink("../outside", root.join("out_link")).unwrap();
        symlink(&outside, root.join("abs_link")).unwrap();
        symlink("/etc", root.join("etc_link")).unwrap();
        symlink("chain2", root.join("chain1")).unwrap();
        symlink("chain3", root.join("chain2")).unwrap();
        symlink("..", root.join("chain3")).unwrap();
        symlink("src", root.join("in_link")).unwrap();
        symlink("../outside/nothing-yet", root.join("dangle")).unwrap();
        symlink("../../outside/secret.txt", root.join("src/file_link")).unwrap();
        symlink("../../..", root.join("src/deep/up2")).unwrap();
    }
    Tree {
        _dir: dir,
        parent,
        root,
    }
}

/// Everything under `dir` with its content, links as their targets.
fn snapshot(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                out.push((
                    p.clone(),
                    format!("-> {:?}", std::fs::read_link(&p).unwrap()),
                ));
            } else if t.is_dir() {
                stack.push(p.clone());
                out.push((p, "dir".into()));
            } else {
                out.push((p.clone(), std::fs::read_to_string(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just("".to_owned()),
        Just("/".to_owned()),
        Just("\\".to_owned()),
        Just("..\\..".to_owned()),
        Just("%2e%2e".to_owned()),
        Just("%2e%2e%2f".to_owned()),
        Just("...".to_owned()),
        Just("a\0b".to_owned()),
        Just("\0".to_owned()),
        Just("x".repeat(300)),
        Just("out_link".to_owned()),
        Just("abs_link".to_owned()),
        Just("etc_link".to_owned()),
        Just("chain1".to_owned()),
        Just("in_link".to_owned()),
        Just("dangle".to_owned()),
        Just("src".to_owned()),
        Just("deep".to_owned()),
        Just("up2".to_owned()),
        Just("file_link".to_owned()),
        Just("secret.txt".to_owned()),
        Just("outside".to_owned()),
        Just("new".to_owned()),
        "[a-z]{1,8}",
    ]
}

fn hostile_path() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just(""), Just("/"), Just("//"), Just("\\"), Just("./")],
        proptest::collection::vec(segment(), 1..7),
    )
        .prop_map(|(lead, segs)| format!("{lead}{}", segs.join("/")))
}

/// Where `path` really leads: itself if it exists (links resolved),
/// otherwise its deepest existing ancestor.
fn real_location(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    loop {
        if let Ok(c) = p.canonicalize() {
            return c;
        }
        if !p.pop() {
            return p;
        }
    }
}

fn tool(tools: &[DynAction], name: &str) -> DynAction {
    tools.iter().find(|t| t.name() == name).unwrap().clone()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, .. ProptestConfig::default() })]

    #[test]
    fn no_path_resolves_outside_the_root(path in hostile_path()) {
        let t = tree();
        let root = Root::new(&t.root).unwrap();
        if let Ok(resolved) = root.resolve(&path) {
            let real = real_location(&resolved);
            prop_assert!(real.starts_with(&t.root), "{path:?} resolved to {real:?}");
        }
    }

    #[test]
    fn the_tools_touch_nothing_outside_the_root(path in hostile_path(), content in "[a-z]{0,16}") {
        let t = tree();
        let outside_before = snapshot(&t.parent.join("outside"));
        let fs = filesystem(FilesystemOptions::new(&t.root).allow_write_access(true)).unwrap();
        let tools = fs.tools();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let calls: [(&str, Value); 4] = [
                ("write_file", json!({"filePath": path, "content": content})),
                ("search_and_replace", json!({"filePath": path, "edits": ["<<<<<<< SEARCH\nsecret\n=======\npwned\n>>>>>>> REPLACE"]})),
                ("read_file", json!({"filePath": path})),
                ("list_files", json!({"dirPath": path, "recursive": true})),
            ];
            for (name, input) in calls {
                let out = tool(&tools, name).run_json(input, Default::default()).await;
                if let Ok(out) = out {
                    // A listing names nothing that is not under the root.
                    if name == "list_files" {
                        for entry in out.output.as_array().unwrap() {
                            let p = entry["path"].as_str().unwrap();
                            prop_assert!(!p.contains("secret"), "{path:?} listed {p}");
                        }
                    }
                }
            }
            Ok(())
        })?;
        prop_assert_eq!(snapshot(&t.parent.join("outside")), outside_before);
        let top: Vec<_> = std::fs::read_dir(&t.parent).unwrap().flatten().map(|e| e.file_name()).collect();
        prop_assert_eq!(top.len(), 2, "something was created beside the root: {:?}", top);
    }
}

#[test]
fn named_escapes_are_denied_with_genkit_js_message() {
    let t = tree();
    let root = Root::new(&t.root).unwrap();
    for p in [
        "..",
        "../outside/secret.txt",
        "/etc/passwd",
        "src/../../outside",
        "out_link/secret.txt",
        "abs_link",
        "etc_link/passwd",
        "chain1/outside/secret.txt",
        "dangle",
        "src/file_link",
        "src/deep/up2/outside",
        "a\0b",
    ] {
        let err = root.resolve(p).unwrap_err();
        assert_eq!(err.message(), ACCESS_DENIED, "{p}");
    }
    for p in [
        "",
        ".",
        "src/../src/a.txt",
        "in_link/a.txt",
        "new/dir/file.txt",
        "%2e%2e",
        "..\\..",
    ] {
        let r = root.resolve(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(real_location(&r).starts_with(&t.root), "{p}");
    }
}

#[tokio::test]
async fn size_caps_and_atomic_writes() {
    let t = tree();
    let fs = filesystem(
        FilesystemOptions::new(&t.root)
            .allow_write_access(true)
            .max_file_bytes(8)
            .max_list_entries(3),
    )
    .unwrap();
    let tools = fs.tools();
    let run = |name: &'static str, input: Value| {
        let t = tool(&tools, name);
        async move { t.run_json(input, Default::default()).await }
    };
    let err = run(
        "write_file",
        json!({"filePath": "big.txt", "content": "123456789"}),
    )
    .await
    .unwrap_err();
    assert!(
        err.message().contains("over the 8-byte limit"),
        "{}",
        err.message()
    );
    assert!(!t.root.join("big.txt").exists());
    std::fs::write(t.root.join("huge.txt"), "0123456789").unwrap();
    let err = run("read_file", json!({"filePath": "huge.txt"}))
        .await
        .unwrap_err();
    assert!(
        err.message().contains("over the 8-byte limit"),
        "{}",
        err.message()
    );
    let err = run("list_files", json!({"dirPath": "", "recursive": true}))
        .await
        .unwrap_err();
    assert!(
        err.message().contains("More than 3 entries"),
        "{}",
        err.message()
    );

    // A write replaces the file whole and leaves no temporary behind.
    run(
        "write_file",
        json!({"filePath": "src/a.txt", "content": "new"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(t.root.join("src/a.txt")).unwrap(),
        "new"
    );
    let names: Vec<_> = std::fs::read_dir(t.root.join("src"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".genkit-write-")),
        "{names:?}"
    );
}

#[test]
fn a_missing_root_is_refused() {
    let err = filesystem(FilesystemOptions::new("/definitely/not/here"))
        .err()
        .unwrap();
    assert!(
        err.message().contains("root directory"),
        "{}",
        err.message()
    );
}
