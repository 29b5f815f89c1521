//! Citations: the sources are numbered `[1]`…`[k]` for the model, which
//! cites them by number; the answer's markers are read back and matched
//! to the retrieved documents.

use genkit::prelude::*;
use genkit::types::DocumentData;

/// A retrieved document the answer cites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    /// The number the answer cites it by.
    pub number: u32,
    /// The file it came from, relative to the indexed folder.
    pub source: String,
    /// The headings it is under, outermost first.
    pub headings: Vec<String>,
    /// The chunk's text.
    pub text: String,
}

/// The metadata key the source number is kept under; Genkit's context
/// rendering cites a document by its `ref` (`- [1]: …`).
pub const REF_KEY: &str = "ref";

/// Numbers `docs` 1, 2, … in their (relevance) order, as their `ref`.
pub fn number_sources(docs: Vec<DocumentData>) -> Vec<DocumentData> {
    docs.into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            d.metadata
                .get_or_insert_with(Default::default)
                .insert(REF_KEY.into(), Value::from((i + 1).to_string()));
            d
        })
        .collect()
}

/// Every number cited in `answer`, in order of first citation: `[2]`,
/// `[1, 3]` and `[1][2]` all count; other brackets (`[server]`, `[x1]`)
/// do not.
pub fn cited_numbers(answer: &str) -> Vec<u32> {
    let mut found: Vec<u32> = Vec::new();
    let mut rest = answer;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(']') else { break };
        let inside = &rest[..close];
        let numbers: Option<Vec<u32>> = inside
            .split(',')
            .map(|n| n.trim().parse::<u32>().ok())
            .collect();
        if let Some(numbers) = numbers {
            for n in numbers {
                if !found.contains(&n) {
                    found.push(n);
                }
            }
            rest = &rest[close + 1..];
        }
    }
    found
}

/// What the answer cites: the sources among `sources` (numbered by
/// [`number_sources`]), and the numbers that name no source.
pub fn resolve(answer: &str, sources: &[DocumentData]) -> (Vec<Citation>, Vec<u32>) {
    let mut citations = Vec::new();
    let mut unknown = Vec::new();
    for n in cited_numbers(answer) {
        let doc = (n as usize).checked_sub(1).and_then(|i| sources.get(i));
        match doc {
            Some(doc) => citations.push(citation(n, doc)),
            None => unknown.push(n),
        }
    }
    (citations, unknown)
}

fn citation(number: u32, doc: &DocumentData) -> Citation {
    let meta = doc.metadata.as_ref();
    let source = meta
        .and_then(|m| m.get("source"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let headings = meta
        .and_then(|m| m.get("headings"))
        .and_then(Value::as_array)
        .map(|h| {
            h.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    Citation {
        number,
        source,
        headings,
        text: doc.text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_read_in_order_without_repeats() {
        assert_eq!(cited_numbers("a [2]. b [1, 3]; c [1][2]."), [2, 1, 3]);
        assert_eq!(cited_numbers("set `port` under `[server]` [1]"), [1]);
        assert_eq!(
            cited_numbers("[x1] [ ] [1 2] [-1] no close ["),
            Vec::<u32>::new()
        );
        assert_eq!(cited_numbers("[99999999999]"), Vec::<u32>::new());
    }

    #[test]
    fn numbers_outside_the_sources_are_reported_not_cited() {
        let sources = number_sources(vec![
            DocumentData::from_text("one"),
            DocumentData::from_text("two"),
        ]);
        assert_eq!(sources[1].metadata.as_ref().unwrap()[REF_KEY], "2");
        let (cited, unknown) = resolve("x [2] y [0] z [7]", &sources);
        assert_eq!(cited.len(), 1);
        assert_eq!((cited[0].number, cited[0].text.as_str()), (2, "two"));
        assert_eq!(unknown, [0, 7]);
    }
}
