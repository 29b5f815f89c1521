//! `skills`: a library of `SKILL.md` instructions the model can load on
//! demand (Genkit JS's `skills` from `@genkit-ai/middleware`).
//!
//! Each subdirectory `<name>` (not starting with `.`) of a skill path that
//! holds a `SKILL.md` is a skill named `<name>`, described by the
//! `description:` line of the file's `---` frontmatter. Before each turn
//! the middleware adds to the system message (creating one if needed) a
//! `<skills>` block listing them, marked with `skills-instructions`
//! metadata so later turns update it instead of adding another; the model
//! loads one with the `use_skill` tool, which answers with the whole file.
//! Directories are scanned once per middleware instance, as in Genkit JS,
//! in name order (Genkit JS keeps the OS's order).

use async_trait::async_trait;
use genkit_core::{DynAction, Error, Result};
use genkit_model::middleware::{
    GenerateCallCtx, GenerateEnvelope, GenerateMiddleware, GenerateNext,
};
use genkit_model::tool::Tool;
use genkit_model::types::{GenerateResponse, Message, Part, PartKind, Role};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The metadata key marking the injected instructions part.
pub const SKILLS_INSTRUCTIONS_KEY: &str = "skills-instructions";

const NO_DESCRIPTION: &str = "No description provided.";

/// Options of the [`skills`] middleware (Genkit JS's `skillPaths`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsOptions {
    /// Directories holding skills; `["skills"]` (relative to the working
    /// directory) when absent.
    #[serde(default)]
    pub skill_paths: Option<Vec<PathBuf>>,
}

#[derive(Debug, Clone)]
struct SkillInfo {
    path: PathBuf,
    description: String,
}

/// Skills found, in listing order.
type Catalog = Vec<(String, SkillInfo)>;

/// The `skills` middleware; build it with [`skills`].
pub struct Skills {
    catalog: Arc<OnceLock<Catalog>>,
    paths: Arc<Vec<PathBuf>>,
    tool: DynAction,
}

/// The `skills` middleware over `options.skill_paths`.
pub fn skills(options: SkillsOptions) -> Skills {
    let paths = Arc::new(
        options
            .skill_paths
            .unwrap_or_else(|| vec![PathBuf::from("skills")]),
    );
    let catalog: Arc<OnceLock<Catalog>> = Arc::default();
    let (c, p) = (catalog.clone(), paths.clone());
    let tool = Tool::from_json_schema(
        "use_skill",
        "Use a skill by its name.",
        Some(json!({
            "type": "object",
            "properties": {"skillName": {"type": "string", "description": "The name of the skill to use."}},
            "required": ["skillName"],
            "additionalProperties": true,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })),
        Some(json!({"type": "string", "$schema": "http://json-schema.org/draft-07/schema#"})),
        move |input, _ctx| {
            let (c, p) = (c.clone(), p.clone());
            async move {
                let name = input
                    .get("skillName")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Error::invalid_argument("skillName must be a string"))?;
                let catalog = c.get_or_init(|| scan(&p));
                let info = catalog
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, i)| i)
                    .ok_or_else(|| Error::not_found(format!("Skill '{name}' not found.")))?;
                std::fs::read_to_string(&info.path)
                    .map(Value::from)
                    .map_err(|e| Error::internal(format!("Failed to read skill \"{name}\": {e}")))
            }
        },
    )
    .map(|t| t.to_dyn())
    .unwrap_or_else(|e| panic!("use_skill's fixed schemas compile: {e}"));
    Skills {
        catalog,
        paths,
        tool,
    }
}

impl Skills {
    /// Builds the middleware from a request's config (Genkit JS's keys).
    pub fn from_config(config: Option<&Value>) -> Result<Self> {
        let options = match config {
            Some(c) => serde_json::from_value(c.clone())
                .map_err(|e| Error::invalid_argument(format!("skills middleware config: {e}")))?,
            None => SkillsOptions::default(),
        };
        Ok(skills(options))
    }

    /// The `<skills>` block for the system message, or `None` when there
    /// are no skills.
    pub fn instructions(&self) -> Option<String> {
        let catalog = self.catalog.get_or_init(|| scan(&self.paths));
        if catalog.is_empty() {
            return None;
        }
        let list: Vec<String> = catalog
            .iter()
            .map(|(name, info)| {
                if info.description == NO_DESCRIPTION {
                    format!(" - {name}")
                } else {
                    format!(" - {name} - {}", info.description)
                }
            })
            .collect();
        Some(format!(
            "<skills>\nYou have access to a library of skills that serve as specialized instructions/personas.\nStrongly prefer to use them when working on anything related to them.\nOnly use them once to load the context.\nHere are the available skills:\n{}\n</skills>",
            list.join("\n")
        ))
    }
}

/// Finds the skills under `paths`; unreadable directories and files are
/// skipped, as in Genkit JS. A later path's skill replaces an earlier one
/// of the same name in place.
fn scan(paths: &[PathBuf]) -> Catalog {
    let mut catalog: Catalog = Vec::new();
    for dir in paths {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        for name in names {
            let path = dir.join(&name).join("SKILL.md");
            let Ok(content) = std::fs::read_to_string(&path) else {
                continue;
            };
            let description =
                frontmatter_description(&content).unwrap_or_else(|| NO_DESCRIPTION.to_owned());
            let info = SkillInfo { path, description };
            match catalog.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = info,
                None => catalog.push((name, info)),
            }
        }
    }
    catalog
}

/// The `description:` of a `---` frontmatter block, read as Genkit JS
/// reads it (the first line starting `description:`; no YAML parsing).
pub(crate) fn frontmatter_description(content: &str) -> Option<String> {
    let rest = content.strip_prefix("---")?;
    let ws_len = rest.len() - rest.trim_start().len();
    let last_newline = rest[..ws_len].rfind('\n')?;
    let body = &rest[last_newline + 1..];
    let end = body.find("\n---")?;
    let body = &body[..end];
    let body = body.strip_suffix('\r').unwrap_or(body);
    let mut lines = body.split('\n');
    lines.find_map(|line| {
        let value = line.strip_prefix("description:")?;
        // `\s*(.+)` may run past the line end; JS's `.` stops at the next.
        let value = value.trim_start();
        let value = value.split(['\n', '\r']).next().unwrap_or("").trim();
        (!value.is_empty()).then(|| value.to_owned())
    })
}

fn is_instructions(part: &Part) -> bool {
    matches!(part.kind, PartKind::Text(_))
        && part
            .metadata
            .as_ref()
            .and_then(|m| m.get(SKILLS_INSTRUCTIONS_KEY))
            == Some(&Value::Bool(true))
}

fn instructions_part(text: &str) -> Result<Part> {
    Ok(serde_json::from_value(
        json!({"text": text, "metadata": {SKILLS_INSTRUCTIONS_KEY: true}}),
    )?)
}

#[async_trait]
impl GenerateMiddleware for Skills {
    fn name(&self) -> &str {
        "skills"
    }

    fn tools(&self) -> Vec<DynAction> {
        vec![self.tool.clone()]
    }

    async fn generate(
        &self,
        mut env: GenerateEnvelope,
        ctx: GenerateCallCtx,
        next: GenerateNext,
    ) -> Result<GenerateResponse> {
        let Some(text) = self.instructions() else {
            return next.run(env, ctx).await;
        };
        let messages = &mut env.request.messages;
        let existing = messages
            .iter_mut()
            .find_map(|m| m.content.iter_mut().find(|p| is_instructions(p)));
        match existing {
            Some(part) => {
                if !matches!(&part.kind, PartKind::Text(t) if *t == text) {
                    *part = instructions_part(&text)?;
                }
            }
            None => match messages.iter_mut().find(|m| m.role == Role::System) {
                Some(system) => system.content.push(instructions_part(&text)?),
                None => messages.insert(
                    0,
                    Message::new(Role::System, vec![instructions_part(&text)?]),
                ),
            },
        }
        next.run(env, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::frontmatter_description;

    #[test]
    fn frontmatter_is_read_as_genkit_js_reads_it() {
        let d = |s: &str| frontmatter_description(s);
        assert_eq!(
            d("---\ndescription: Pirate talk.\n---\nbody").as_deref(),
            Some("Pirate talk.")
        );
        assert_eq!(
            d("---  \r\nname: x\r\ndescription:  spaced  \r\n---\r\n").as_deref(),
            Some("spaced")
        );
        // No frontmatter, an unclosed one, or no description line.
        assert_eq!(d("description: x\n"), None);
        assert_eq!(d("---\ndescription: x\n"), None);
        assert_eq!(d("---\nname: x\n---\n"), None);
        // Only a line that starts with the key counts.
        assert_eq!(d("---\n  description: indented\n---\n"), None);
    }
}
