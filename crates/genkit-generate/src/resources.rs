//! Resource parts (`{"resource": {"uri": …}}`) in a request's messages are
//! replaced by the content of the resource serving their URI before the
//! model sees them (Genkit JS's `applyResources`): the resources the call
//! names first, then any registered `/resource/` action whose URI or
//! template matches.

use genkit_core::{Error, Registry, Result};
use genkit_model::resource::{Resource, find_matching_resource};
use genkit_model::types::{GenerateActionOptions, Message, PartKind};

fn has_resource_parts(message: &Message) -> bool {
    message
        .content
        .iter()
        .any(|p| matches!(p.kind, PartKind::Resource(_)))
}

/// The resources a call names, looked up as Genkit JS does: the name as a
/// key, then `/resource/<name>`, then `/dynamic-action-provider/<name>`.
async fn named_resources(registry: &Registry, names: &[String]) -> Result<Vec<Resource>> {
    let mut found = Vec::with_capacity(names.len());
    for name in names {
        let mut action = None;
        for key in [
            name.clone(),
            format!("/resource/{name}"),
            format!("/dynamic-action-provider/{name}"),
        ] {
            if key.starts_with('/')
                && let Some(a) = registry.lookup_action(&key).await?
            {
                action = Some(a);
                break;
            }
        }
        let action =
            action.ok_or_else(|| Error::not_found(format!("Resource {name} not found")))?;
        let resource = Resource::from_action(action)
            .ok_or_else(|| Error::invalid_argument(format!("`{name}` is not a resource action")))?;
        found.push(resource);
    }
    Ok(found)
}

/// Replaces every `resource` part of `raw`'s messages by the content of
/// the resource serving its URI; a URI no resource serves is an error.
pub(crate) async fn apply_resources(
    registry: &Registry,
    raw: &mut GenerateActionOptions,
) -> Result<()> {
    if !raw.messages.iter().any(has_resource_parts) {
        return Ok(());
    }
    let named = named_resources(registry, raw.resources.as_deref().unwrap_or_default()).await?;
    for message in raw.messages.iter_mut().filter(|m| has_resource_parts(m)) {
        let mut content = Vec::with_capacity(message.content.len());
        for part in std::mem::take(&mut message.content) {
            let PartKind::Resource(reference) = &part.kind else {
                content.push(part);
                continue;
            };
            let resource = find_matching_resource(registry, &named, &reference.uri)
                .await?
                .ok_or_else(|| {
                    Error::not_found(format!(
                        "failed to find matching resource for {}",
                        reference.uri
                    ))
                })?;
            content.extend(resource.read(&reference.uri).await?.content);
        }
        message.content = content;
    }
    Ok(())
}
