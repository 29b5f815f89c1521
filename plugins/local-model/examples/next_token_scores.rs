//! How strongly a model prefers each of several continuations at one point
//! of a prompt: the logit and probability of each candidate's first token
//! after `prompt + prefix`, best first. For tuning a prompt for a small
//! model: e.g. how far the service named in the question is ahead of the
//! others where a tool call's argument is chosen.
//!
//! ```sh
//! cargo run --release -p genkit-local-model --example next_token_scores -- \
//!     <model.gguf> <prompt.txt> '{"service": "' api worker scheduler db
//! ```
//!
//! `prompt.txt` is the rendered prompt (as the `genkit_local_model::prompt`
//! trace prints it, control tokens included).

use genkit_local_model::LocalModel;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, prompt, prefix, candidates @ ..] = args.as_slice() else {
        return Err(
            "usage: next_token_scores <model.gguf> <prompt.txt> <prefix> <candidate>...".into(),
        );
    };
    let model = LocalModel::load(model)?;
    let context = format!("{}{prefix}", std::fs::read_to_string(prompt)?);
    let ids = model.tokenize(&context)?;
    let logits = model.next_logits(&ids)?;
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f32 = logits.iter().map(|l| (l - max).exp()).sum();
    let mut scores = Vec::new();
    for candidate in candidates {
        let with = model.tokenize(&format!("{context}{candidate}"))?;
        // The candidate's first token, if the context's tokens stay as they
        // are when it follows (else the context's last token merged with it).
        let first = match with
            .strip_prefix(ids.as_slice())
            .and_then(|rest| rest.first())
        {
            Some(&id) => id,
            None => {
                println!("{candidate:?}: merges with the prefix's last token; not scored");
                continue;
            }
        };
        let logit = logits[first as usize];
        let piece = model.detokenize(&[first])?;
        scores.push((logit, candidate, piece));
    }
    scores.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (logit, candidate, piece) in scores {
        let p = (logit - max).exp() / total;
        println!("{candidate:>12}  first token {piece:?}  logit {logit:7.3}  p {p:.4}");
    }
    Ok(())
}
