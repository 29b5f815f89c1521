//! What a `generate` call did to the conversation it was given, so a caller
//! that keeps the conversation (an agent's session) appends rather than
//! rebuilds it.
//!
//! The contract, kept by the engine and tested in `tests/generate_history.rs`:
//! of the messages a call is given, it may change **only the last one**
//! (docs add their context to it when it is the user's; a resume marks the
//! interrupts of it, the model's message, resolved). Everything else it
//! appends after them: each turn's model message with tool requests and the
//! tool message answering it, then the reply. The response's request echoes
//! the last turn's request (all of that but the reply).

use genkit_model::types::{GenerateResponse, Message};
use std::sync::Arc;

/// The call's conversation from index `keep` on, taken out of `response`
/// (its request's messages from `keep`, then the reply), for a caller whose
/// first `keep` messages the call left as they were: with `n` messages
/// given, `keep = n - 1` covers everything the call may have changed or
/// added.
///
/// `None` when the response has no reply or no request (a background
/// model's operation). If the request holds fewer than `keep` messages
/// (a generate middleware dropped some), only the reply is returned: the
/// caller's own history stands.
pub fn take_history_from(response: &mut GenerateResponse, keep: usize) -> Option<Vec<Message>> {
    take_conversation(response).map(|conversation| conversation_from(conversation, keep))
}

/// The call's whole conversation, taken out of `response`: its request's
/// messages, then the reply. `None` as for [`take_history_from`]; for a
/// caller that may keep the whole list rather than only its tail.
pub fn take_conversation(response: &mut GenerateResponse) -> Option<Vec<Message>> {
    let reply = response.message()?.clone();
    let request = response.request.take()?;
    // Copied only if something (a span record) still shares the history.
    let mut messages = Arc::try_unwrap(request.messages).unwrap_or_else(|shared| (*shared).clone());
    messages.push(reply);
    Some(messages)
}

/// What [`take_history_from`] returns, from a conversation
/// [`take_conversation`] took: its messages from `keep` on (the reply
/// last), or the reply alone when the request held fewer than `keep`.
pub fn conversation_from(mut conversation: Vec<Message>, keep: usize) -> Vec<Message> {
    if keep < conversation.len() {
        conversation.split_off(keep)
    } else {
        conversation.pop().into_iter().collect()
    }
}
