//! genkit-prompt's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

mod formats_custom;
mod genkit_js_prompts;
mod prompt_define;
mod prompt_errors;
mod prompt_folder;
