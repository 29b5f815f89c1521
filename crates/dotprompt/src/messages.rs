//! Turning rendered template text into messages, following the markers the
//! built-in helpers emit.
//!
//! Only markers that the renderer reports count: those written in a
//! template or printed by the `role`, `history`, `section` and `media`
//! helpers. A marker inside an inserted value (`{{input}}` holding
//! `<<<dotprompt:role:system>>>`) stays text, so data cannot make roles,
//! media parts or sections.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::error::{Error, Location, Result};
use crate::types::{JsonMap, Media, MediaPart, Message, Part, PendingPart, Role};

/// How every Dotprompt marker starts.
pub(crate) const MARKER_START: &str = "<<<dotprompt:";
const MARKER_END: &str = ">>>";
const ROLE_PREFIX: &str = "role:";
const HISTORY: &str = "history";
const MEDIA_PREFIX: &str = "media:url";
const SECTION_PREFIX: &str = "section";

/// A piece of rendered text between role/history markers.
enum Piece<'a> {
    /// Text at this byte range.
    Text(usize, usize),
    Role(&'a str),
    History,
}

/// Calls `each` with the pieces of `rendered` split at the
/// `<<<dotprompt:role:xxx>>>` (lowercase role) and `<<<dotprompt:history>>>`
/// markers among `markers` (ascending offsets of the markers that count),
/// dropping whitespace-only text. A text piece is always followed by a
/// marker or is the last piece.
fn for_each_piece<'a>(
    rendered: &'a str,
    markers: &[usize],
    mut each: impl FnMut(Piece<'a>) -> Result<()>,
) -> Result<()> {
    let mut text_start = 0;
    let mut search = 0;
    for &start in markers {
        if start < search {
            continue;
        }
        let Some(body) = rendered
            .get(start..)
            .and_then(|rest| rest.strip_prefix(MARKER_START))
        else {
            continue;
        };
        let marker = if let Some(after_role) = body.strip_prefix(ROLE_PREFIX) {
            let len = after_role
                .bytes()
                .take_while(u8::is_ascii_lowercase)
                .count();
            (len > 0 && after_role[len..].starts_with(MARKER_END)).then(|| {
                (
                    Piece::Role(&after_role[..len]),
                    MARKER_START.len() + ROLE_PREFIX.len() + len + MARKER_END.len(),
                )
            })
        } else if body.starts_with("history>>>") {
            Some((
                Piece::History,
                MARKER_START.len() + HISTORY.len() + MARKER_END.len(),
            ))
        } else {
            None
        };
        if let Some((piece, len)) = marker {
            text_piece(rendered, text_start, start, &mut each)?;
            each(piece)?;
            search = start + len;
            text_start = search;
        }
    }
    text_piece(rendered, text_start, rendered.len(), &mut each)
}

fn text_piece<'a>(
    rendered: &str,
    start: usize,
    end: usize,
    each: &mut impl FnMut(Piece<'a>) -> Result<()>,
) -> Result<()> {
    if rendered
        .get(start..end)
        .is_some_and(|t| !t.trim().is_empty())
    {
        each(Piece::Text(start, end))?;
    }
    Ok(())
}

/// Converts rendered text to messages, inserting `history` as Dotprompt does:
/// at `{{history}}` if present (tagged `purpose: history`); otherwise before
/// the final user message, or at the end if the last message is not a user's.
///
/// Every `<<<dotprompt:...>>>` marker in `rendered` counts. (Rendering a
/// prompt counts only the markers its template and built-in helpers made.)
pub fn to_messages(rendered: &str, history: Option<&[Message]>) -> Result<Vec<Message>> {
    let markers: Vec<usize> = rendered
        .match_indices(MARKER_START)
        .map(|(at, _)| at)
        .collect();
    to_messages_at(Cow::Borrowed(rendered), &markers, history)
}

/// [`to_messages`], where only the markers at `markers` (ascending byte
/// offsets into `rendered`) count. The text of a message is copied out of
/// `rendered`, except that of the last message when it ends the text and
/// `rendered` is owned: that one keeps `rendered`'s buffer.
pub(crate) fn to_messages_at(
    rendered: Cow<'_, str>,
    markers: &[usize],
    history: Option<&[Message]>,
) -> Result<Vec<Message>> {
    let mut messages = Vec::with_capacity(markers.len() + 1);
    // The message being made: its role, and its text (one piece: a piece
    // is always followed by a role or history marker, which ends it).
    let mut role = Role::User;
    let mut text = None;
    for_each_piece(&rendered, markers, |piece| {
        match piece {
            Piece::Role(name) => {
                let next = Role::parse(name).ok_or_else(|| Error::InvalidRole {
                    role: name.to_owned(),
                    location: Location::default(),
                })?;
                if let Some(range) = text.take() {
                    messages.push(message(role, &rendered, range, markers));
                }
                role = next;
            }
            Piece::History => {
                if let Some(range) = text.take() {
                    messages.push(message(role, &rendered, range, markers));
                }
                for message in history.unwrap_or_default() {
                    let mut message = message.clone();
                    message
                        .metadata
                        .get_or_insert_with(JsonMap::new)
                        .insert("purpose".into(), json!("history"));
                    messages.push(message);
                }
                role = Role::Model;
            }
            Piece::Text(start, end) => text = Some((start, end)),
        }
        Ok(())
    })?;
    if let Some((start, end)) = text {
        let inside = markers_in(markers, start, end);
        let last = match rendered {
            // The text that ends the render, owned: its buffer is the
            // message's (the text before it moved out, nothing copied).
            Cow::Owned(mut owned) if inside.is_empty() && end == owned.len() => {
                owned.drain(..start);
                Message {
                    role,
                    content: text_part(owned).into_iter().collect(),
                    metadata: None,
                }
            }
            rendered => message(role, &rendered, (start, end), markers),
        };
        messages.push(last);
    }
    Ok(insert_history(messages, history))
}

/// The message of `role` whose text is `rendered[start..end]`.
fn message(role: Role, rendered: &str, (start, end): (usize, usize), markers: &[usize]) -> Message {
    let text = rendered.get(start..end).unwrap_or_default();
    let inside = markers_in(markers, start, end);
    Message {
        role,
        content: if inside.is_empty() {
            // Text only: one part.
            text_part(text.to_owned()).into_iter().collect()
        } else {
            to_parts(text, inside, start)
        },
        metadata: None,
    }
}

/// The markers among `markers` (ascending) in `start..end`.
fn markers_in(markers: &[usize], start: usize, end: usize) -> &[usize] {
    let from = markers.partition_point(|&at| at < start);
    let to = markers.partition_point(|&at| at < end);
    markers.get(from..to).unwrap_or_default()
}

fn is_history(message: &Message) -> bool {
    message
        .metadata
        .as_ref()
        .and_then(|m| m.get("purpose"))
        .is_some_and(|p| p == "history")
}

/// Inserts history where no `{{history}}` marker placed it.
fn insert_history(mut messages: Vec<Message>, history: Option<&[Message]>) -> Vec<Message> {
    let Some(history) = history else {
        return messages;
    };
    if messages.iter().any(is_history) {
        return messages;
    }
    match messages.last() {
        Some(last) if last.role == Role::User => {
            let at = messages.len() - 1;
            messages.splice(at..at, history.iter().cloned());
        }
        _ => messages.extend(history.iter().cloned()),
    }
    messages
}

/// Splits message text into text, media and section parts, at the
/// markers among `markers` (ascending offsets of those that count, from
/// `base` on: `text` starts there).
fn to_parts(text: &str, markers: &[usize], base: usize) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut text_start = 0;
    let mut search = 0;
    for &at in markers {
        let start = at - base;
        if start < search {
            continue;
        }
        let Some(body) = text
            .get(start..)
            .and_then(|rest| rest.strip_prefix(MARKER_START))
        else {
            continue;
        };
        let is_part_marker = body.starts_with(MEDIA_PREFIX) || body.starts_with(SECTION_PREFIX);
        // The marker ends at the first `>>>` on the same line.
        let end = is_part_marker
            .then(|| body.split('\n').next().unwrap_or_default().find(MARKER_END))
            .flatten();
        if let Some(end) = end {
            push_part_text(&mut parts, &text[text_start..start]);
            parts.push(marker_part(&body[..end]));
            search = start + MARKER_START.len() + end + MARKER_END.len();
            text_start = search;
        }
    }
    push_part_text(&mut parts, &text[text_start..]);
    parts
}

/// A text part of `text`, unless it is only whitespace.
fn text_part(text: String) -> Option<Part> {
    (!text.trim().is_empty()).then(|| Part::text(text))
}

fn push_part_text(parts: &mut Vec<Part>, text: &str) {
    if !text.trim().is_empty() {
        parts.push(Part::text(text));
    }
}

/// Builds the part for a `media:url URL [TYPE]` or `section NAME` marker.
fn marker_part(marker: &str) -> Part {
    let mut words = marker.split(' ');
    let kind = words.next().unwrap_or_default();
    let first = words.next();
    if kind.starts_with(MEDIA_PREFIX) {
        Part::Media(MediaPart {
            media: Media {
                url: first.unwrap_or_default().to_owned(),
                content_type: words.next().filter(|t| !t.is_empty()).map(str::to_owned),
            },
            metadata: None,
        })
    } else {
        let mut metadata = JsonMap::new();
        if let Some(name) = first {
            metadata.insert("purpose".into(), Value::String(name.to_owned()));
        }
        metadata.insert("pending".into(), Value::Bool(true));
        Part::Pending(PendingPart { metadata })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(message: &Message) -> &str {
        match &message.content[..] {
            [Part::Text(t)] => &t.text,
            other => panic!("unexpected parts {other:?}"),
        }
    }

    #[test]
    fn default_role_is_user() {
        let messages = to_messages("Hello", None).unwrap();
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].role, Role::User);
        assert_eq!(text(&messages[0]), "Hello");
    }

    #[test]
    fn role_switches() {
        let rendered = "<<<dotprompt:role:system>>>Be brief.\n<<<dotprompt:role:user>>>Hi";
        let messages = to_messages(rendered, None).unwrap();
        assert_eq!(messages[0].role, Role::System);
        assert_eq!(text(&messages[0]), "Be brief.\n");
        assert_eq!(messages[1].role, Role::User);
    }

    #[test]
    fn unknown_role_is_an_error() {
        let err = to_messages("<<<dotprompt:role:wizard>>>x", None).unwrap_err();
        assert!(matches!(err, Error::InvalidRole { role, .. } if role == "wizard"));
    }

    #[test]
    fn media_and_sections() {
        let rendered =
            "See <<<dotprompt:media:url http://x/y.png image/png>>><<<dotprompt:section tail>>>end";
        let messages = to_messages(rendered, None).unwrap();
        let json = serde_json::to_value(&messages[0].content).unwrap();
        assert_eq!(
            json,
            json!([
                {"text": "See "},
                {"media": {"url": "http://x/y.png", "contentType": "image/png"}},
                {"metadata": {"purpose": "tail", "pending": true}},
                {"text": "end"}
            ])
        );
    }

    #[test]
    fn history_goes_before_last_user_message_without_marker() {
        let history = vec![Message {
            role: Role::Model,
            content: vec![Part::text("earlier")],
            metadata: None,
        }];
        let messages = to_messages("Question", Some(&history)).unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0], history[0]);
        assert_eq!(text(&messages[1]), "Question");
    }

    /// A render's text is owned, and its last message keeps its buffer;
    /// the messages are those made from borrowed text.
    #[test]
    fn owned_text_makes_the_same_messages() {
        let history = [Message {
            role: Role::Model,
            content: vec![Part::text("earlier")],
            metadata: None,
        }];
        for rendered in [
            "Hello",
            "  \n ",
            "",
            "<<<dotprompt:role:system>>>Be brief.\n<<<dotprompt:role:user>>>Items:\n- a\n- b\n",
            "<<<dotprompt:role:system>>>only system  ",
            "<<<dotprompt:role:user>>>\n<<<dotprompt:role:model>>>x<<<dotprompt:role:user>>>  ",
            "a<<<dotprompt:history>>>b",
            "a<<<dotprompt:history>>>",
            "See <<<dotprompt:media:url http://x/y.png image/png>>> end",
            "<<<dotprompt:role:user>>>x<<<dotprompt:section tail>>>",
            "x <<<dotprompt:role:bad>>> y <<<dotprompt:role:user>>>z",
            "<<<dotprompt:role:Upper>>>stays text<<<dotprompt:nothing>>> é",
        ] {
            let markers: Vec<usize> = rendered
                .match_indices(MARKER_START)
                .map(|(at, _)| at)
                .collect();
            for history in [None, Some(&history[..])] {
                let owned = to_messages_at(Cow::Owned(rendered.to_owned()), &markers, history);
                let borrowed = to_messages_at(Cow::Borrowed(rendered), &markers, history);
                match (owned, borrowed) {
                    (Ok(owned), Ok(borrowed)) => assert_eq!(owned, borrowed, "{rendered:?}"),
                    (Err(owned), Err(borrowed)) => {
                        assert_eq!(owned.to_string(), borrowed.to_string(), "{rendered:?}");
                    }
                    (owned, borrowed) => panic!("{rendered:?}: {owned:?} vs {borrowed:?}"),
                }
            }
        }
        let rendered = "<<<dotprompt:role:system>>>Be brief.\n<<<dotprompt:role:user>>>Hi ";
        let markers = [0, 37];
        let messages = to_messages_at(Cow::Owned(rendered.to_owned()), &markers, None).unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(text(&messages[0]), "Be brief.\n");
        assert_eq!(messages[1].role, Role::User);
        assert_eq!(text(&messages[1]), "Hi ");
    }
}
