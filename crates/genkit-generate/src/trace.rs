//! The tracing of a generate call, kept out of the loop: the loop opens a
//! turn's `generate` span ([`TurnSpans::open`]) and closes them all with the
//! call's result ([`TurnSpans::close`]); a turn opens its model call's record
//! ([`ModelTrace::open`]) and closes it with the model's message
//! ([`ModelTrace::close`]). What the spans record, and how the records share
//! the call's history, is `genkit_model::span_record`'s.

use genkit_core::Result;
use genkit_core::tracing::{Span, SpanJson, SpanOptions, SpanType};
use genkit_model::span_record::{
    History, record_final_response, record_options, record_request, record_response,
};
use genkit_model::types::{GenerateActionOptions, GenerateRequest, GenerateResponse, Message};
use std::sync::Arc;

thread_local! {
    /// The name of a turn's span without a step name.
    static GENERATE: Arc<str> = Arc::from("generate");
}

/// The spans of a call's turns, outermost first. Most calls have a single
/// turn, whose span is kept here without allocating a list.
#[derive(Default)]
pub(crate) struct TurnSpans {
    first: Option<Span>,
    later: Vec<Span>,
}

impl TurnSpans {
    /// Opens the next turn's `generate` span (named by the options' step
    /// name), inside the previous turn's span so the spans nest as Genkit
    /// JS's recursion nests them, recording the turn's options as input.
    /// `history`: the log the turns' records share, when nothing but the
    /// loop changes the history between turns (no generate middleware).
    pub(crate) fn open(&self, raw: &mut GenerateActionOptions, history: Option<&History>) -> Span {
        let name = match raw.step_name.as_deref() {
            Some(step) => Arc::from(step),
            // The usual name, shared rather than allocated per turn.
            None => GENERATE.with(Arc::clone),
        };
        let opts = SpanOptions::new(name, SpanType::Util);
        let mut span = match self.last() {
            Some(parent) => parent.start_child(&opts),
            None => Span::start(&opts),
        };
        if span.is_recording() {
            match history {
                Some(history) => {
                    if let Some(json) = record_options(raw, history) {
                        span.set_input_json(json);
                    }
                }
                None => span.set_input(&*raw),
            }
        }
        span
    }

    /// Keeps a turn's span (once its turn has run) for [`close`](Self::close).
    pub(crate) fn push(&mut self, span: Span) {
        match self.first {
            None => self.first = Some(span),
            Some(_) => self.later.push(span),
        }
    }

    /// The innermost span so far.
    fn last(&self) -> Option<&Span> {
        self.later.last().or(self.first.as_ref())
    }

    /// Closes the turns' spans, innermost first, with the call's result:
    /// every turn's span records the final response (as nested calls
    /// would), or ends with the error. `history`: as given to
    /// [`open`](Self::open).
    pub(crate) fn close(
        self,
        mut result: Result<GenerateResponse>,
        history: Option<&History>,
    ) -> Result<GenerateResponse> {
        // Recorded once for all the turns (shared, not copied, and written
        // once by the exporter).
        let recorded = match (&result, &self.first) {
            (Ok(response), Some(first)) if first.is_recording() => match history {
                Some(history) => record_final_response(response, history),
                None => record_response(response),
            },
            _ => None,
        };
        for mut span in self.later.into_iter().rev().chain(self.first) {
            match &mut result {
                Ok(_) => {
                    if let Some(json) = &recorded {
                        span.set_output_json(json.clone());
                    }
                    span.end_ok();
                }
                Err(e) => span.end_err(e),
            }
        }
        result
    }
}

/// What a turn's model span records, around one model call. The model
/// action opens and closes the span itself; this gives it the request as
/// the call's history records it, and lets the call's log take the
/// response's message as that span recorded it (instead of a copy).
pub(crate) struct ModelTrace<'a> {
    history: &'a History,
    /// Whether the model span records the response's message as a piece
    /// of this call's log (see `span_record`), to be taken or dropped.
    shares_message: bool,
}

impl<'a> ModelTrace<'a> {
    /// Before the model call: the span's input (`None`: the span records
    /// the request the model action receives). `direct`: no hook can change
    /// the request on its way to the model, and the model answers with a
    /// message (not a background operation), so the span's request is this
    /// one and its response is the turn's.
    pub(crate) fn open(
        history: &'a History,
        raw: &GenerateActionOptions,
        request: &GenerateRequest,
        direct: bool,
    ) -> (Self, Option<SpanJson>) {
        let input = if direct && genkit_core::tracing::is_recording() {
            record_request(raw, request, history)
        } else {
            None
        };
        let shares_message = input.is_some();
        if shares_message {
            history.expect_model_message();
        }
        (
            Self {
                history,
                shares_message,
            },
            input,
        )
    }

    /// After the model call: `message` is the response's message as the
    /// loop keeps it. (A failed call drops the trace instead, which forgets
    /// the expected message.)
    pub(crate) fn close(mut self, message: &Message) {
        if std::mem::take(&mut self.shares_message) {
            self.history.take_model_message(message);
        }
    }
}

impl Drop for ModelTrace<'_> {
    /// A call that failed (or a response without a message to keep): the
    /// log takes nothing, and a later call on this thread is not mistaken
    /// for this one's.
    fn drop(&mut self) {
        if self.shares_message {
            self.history.forget_model_message();
        }
    }
}
