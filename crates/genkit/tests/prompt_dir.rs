//! The default prompt folder: absent is fine, and a prompt looked up then
//! says where it was looked for.

use genkit::prelude::*;
use genkit::status::StatusCode;

#[test]
fn a_missing_prompt_names_the_default_folder_and_says_it_is_absent() {
    // `cargo test` runs in the crate's folder, which has no `prompts`.
    let cwd = std::env::current_dir().unwrap();
    assert!(!cwd.join("prompts").exists());
    let ai = Genkit::builder().build().unwrap();
    let err = ai.prompt::<Value, Value>("hello").unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(
        err.message(),
        format!(
            "Prompt hello not found: the prompt folder `./prompts` ({abs}, relative to the \
             working directory {cwd}) does not exist, so no prompt files were loaded: create \
             {abs}/hello.prompt, or point `prompt_dir` at your folder",
            abs = cwd.join("prompts").display(),
            cwd = cwd.display(),
        )
    );
}

#[test]
fn without_a_prompt_folder_the_message_stays_short() {
    let ai = Genkit::builder().no_prompt_dir().build().unwrap();
    let err = ai.prompt::<Value, Value>("hello").unwrap_err();
    assert_eq!(err.message(), "Prompt hello not found");
}
