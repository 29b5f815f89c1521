//! Partial registration, keeping the set of registered partials acyclic.
//!
//! A partial that includes itself, directly or through others, would make
//! every template that includes it render without end. Every registration
//! is therefore checked: a partial that closes a cycle is refused with
//! [`Error::PartialCycle`]. (Inline partials may include themselves: their
//! recursion ends with the data, and the renderer bounds it.)

use std::collections::{HashMap, HashSet};

use handlebars::template::Template;

use crate::error::{Error, Location, Result};
use crate::template;

/// Compiles a partial's source; syntax errors name the partial.
pub(crate) fn compile_partial(name: &str, source: &str) -> Result<Template> {
    template::compile(source, Some(name)).map_err(|e| Error::TemplateSyntax {
        message: template::syntax_message(&e, source),
        location: Location {
            partial: Some(name.to_owned()),
            line: e.pos().map(|p| p.0),
            column: e.pos().map(|p| p.1),
            ..Location::default()
        },
    })
}

/// Registers a compiled partial unless it would close an include cycle.
pub(crate) fn register(
    registry: &mut HashMap<String, Template>,
    name: &str,
    partial: Template,
) -> Result<()> {
    if let Some(cycle) = find_cycle(registry, name, &partial) {
        return Err(Error::PartialCycle { cycle });
    }
    registry.insert(name.to_owned(), partial);
    Ok(())
}

/// Looks for a chain of includes from `partial` (to be registered as `name`)
/// back to `name`, through the partials already registered.
fn find_cycle(
    registry: &HashMap<String, Template>,
    name: &str,
    partial: &Template,
) -> Option<Vec<String>> {
    let mut path = vec![name.to_owned()];
    let mut seen = HashSet::new();
    search(registry, name, partial, &mut path, &mut seen).then_some(path)
}

fn search(
    registry: &HashMap<String, Template>,
    target: &str,
    template: &Template,
    path: &mut Vec<String>,
    seen: &mut HashSet<String>,
) -> bool {
    for (include, _) in template::usage(template).partials {
        if include == target {
            path.push(include);
            return true;
        }
        if !seen.insert(include.clone()) {
            continue;
        }
        if let Some(next) = registry.get(&include) {
            path.push(include);
            if search(registry, target, next, path, seen) {
                return true;
            }
            path.pop();
        }
    }
    false
}

/// The registered partials reachable from `template`, each once.
pub(crate) fn reachable<'r>(
    registry: &'r HashMap<String, Template>,
    template: &Template,
) -> Vec<(&'r str, &'r Template)> {
    let mut out: Vec<(&str, &Template)> = Vec::new();
    let mut queue: Vec<String> = template::usage(template)
        .partials
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let mut seen = HashSet::new();
    while let Some(name) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some((key, partial)) = registry.get_key_value(&name) {
            queue.extend(
                template::usage(partial)
                    .partials
                    .into_iter()
                    .map(|(n, _)| n),
            );
            out.push((key.as_str(), partial));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    fn new_registry() -> HashMap<String, Template> {
        HashMap::new()
    }

    fn define(registry: &mut HashMap<String, Template>, name: &str, source: &str) -> Result<()> {
        let partial = compile_partial(name, source)?;
        register(registry, name, partial)
    }

    #[test]
    fn nested_partials_are_fine() {
        let mut registry = new_registry();
        define(&mut registry, "a", "A{{> b}}").unwrap();
        define(&mut registry, "b", "B{{> c}}").unwrap();
        define(&mut registry, "c", "C").unwrap();
    }

    #[test]
    fn self_inclusion_is_a_cycle() {
        let mut registry = new_registry();
        let err = define(&mut registry, "a", "{{#if x}}{{> a}}{{/if}}").unwrap_err();
        assert!(matches!(err, Error::PartialCycle { cycle } if cycle == ["a", "a"]));
    }

    #[test]
    fn indirect_cycle_is_refused() {
        let mut registry = new_registry();
        define(&mut registry, "a", "{{> b}}").unwrap();
        define(&mut registry, "b", "{{> c}}").unwrap();
        let err = define(&mut registry, "c", "{{> a}}").unwrap_err();
        assert_eq!(err.to_string(), "partial cycle: c -> a -> b -> c");
        assert!(!registry.contains_key("c"));
    }
}
