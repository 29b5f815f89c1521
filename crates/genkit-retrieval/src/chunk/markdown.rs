//! Markdown: chunks follow the document's sections (ATX headings, `#` to
//! `######`), then its blocks (paragraphs and fenced code), and never cut a
//! fenced code block.

use super::ChunkOptions;
use super::text::chunk_text;

/// A chunk of Markdown with the headings it is under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkdownChunk {
    /// The Markdown text (a section's first chunk starts with its heading).
    pub text: String,
    /// The heading texts it is under, outermost first (empty before the
    /// first heading).
    pub headings: Vec<String>,
}

enum Block {
    Heading {
        level: usize,
        title: String,
        line: String,
    },
    Code(String),
    Paragraph(String),
}

/// `Some((char, run length))` when `line` opens or closes a code fence.
fn fence(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let c = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.chars().take_while(|x| *x == c).count();
    (run >= 3).then_some((c, run))
}

fn heading(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    // A closing sequence of `#`s is not part of the title.
    let title = after.trim();
    let stripped = title.trim_end_matches('#');
    let title = if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
        stripped.trim_end()
    } else {
        title
    };
    Some((level, title.to_owned()))
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut code: Option<((char, usize), Vec<&str>)> = None;
    let flush = |para: &mut Vec<&str>, out: &mut Vec<Block>| {
        if !para.is_empty() {
            out.push(Block::Paragraph(para.join("\n")));
            para.clear();
        }
    };
    for line in markdown.lines() {
        if let Some((open, lines)) = &mut code {
            lines.push(line);
            let closed = fence(line).is_some_and(|(c, run)| {
                c == open.0 && run >= open.1 && line.trim().chars().all(|x| x == c)
            });
            if closed && lines.len() > 1 {
                out.push(Block::Code(lines.join("\n")));
                code = None;
            }
            continue;
        }
        if let Some(f) = fence(line) {
            flush(&mut para, &mut out);
            code = Some((f, vec![line]));
        } else if let Some((level, title)) = heading(line) {
            flush(&mut para, &mut out);
            out.push(Block::Heading {
                level,
                title,
                line: line.trim().to_owned(),
            });
        } else if line.trim().is_empty() {
            flush(&mut para, &mut out);
        } else {
            para.push(line);
        }
    }
    flush(&mut para, &mut out);
    // An unclosed fence runs to the end of the document.
    if let Some((_, lines)) = code {
        out.push(Block::Code(lines.join("\n")));
    }
    out
}

struct Packer<'a> {
    opts: &'a ChunkOptions,
    headings: Vec<String>,
    buffer: String,
    buffer_has_code: bool,
    out: Vec<MarkdownChunk>,
}

impl Packer<'_> {
    fn emit(&mut self, text: String) {
        if !text.trim().is_empty() {
            self.out.push(MarkdownChunk {
                text,
                headings: self.headings.clone(),
            });
        }
    }

    fn flush(&mut self) {
        let text = std::mem::take(&mut self.buffer);
        self.buffer_has_code = false;
        self.emit(text);
    }

    fn joined_len(&self, block: &str) -> usize {
        let sep = if self.buffer.is_empty() { 0 } else { 2 };
        self.buffer.chars().count() + sep + block.chars().count()
    }

    fn append(&mut self, block: &str) {
        if !self.buffer.is_empty() {
            self.buffer.push_str("\n\n");
        }
        self.buffer.push_str(block);
    }

    fn add(&mut self, block: &str, is_code: bool) {
        let size = self.opts.size();
        if self.joined_len(block) <= size {
            self.append(block);
            self.buffer_has_code |= is_code;
            return;
        }
        if is_code {
            // A code block is never cut: alone in its chunk, even when
            // larger than the size.
            self.flush();
            self.append(block);
            self.buffer_has_code = true;
            if block.chars().count() > size {
                self.flush();
            }
            return;
        }
        if block.chars().count() <= size {
            self.flush();
            self.append(block);
            return;
        }
        // A paragraph larger than a chunk: split as text, together with
        // what is pending (a heading, short paragraphs) unless that holds code.
        if self.buffer_has_code {
            self.flush();
        }
        let mut text = std::mem::take(&mut self.buffer);
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(block);
        let mut pieces = chunk_text(&text, self.opts);
        // The last piece may take the blocks that follow.
        let last = pieces.pop();
        for p in pieces {
            self.emit(p);
        }
        self.buffer = last.unwrap_or_default();
    }
}

/// Splits Markdown into chunks of at most `opts.size()` characters: each
/// section (a heading and what follows it up to the next heading) is
/// chunked on its own, blocks (paragraphs, lists, quotes, fenced code)
/// packed whole while they fit, a paragraph larger than a chunk split as
/// [`chunk_text`] splits text (with its overlap). A fenced code block is
/// never cut, so one larger than the size is a chunk of its own, over the
/// size. `#` lines inside code fences are not headings.
pub fn chunk_markdown(markdown: &str, opts: &ChunkOptions) -> Vec<MarkdownChunk> {
    let mut p = Packer {
        opts,
        headings: Vec::new(),
        buffer: String::new(),
        buffer_has_code: false,
        out: Vec::new(),
    };
    let mut levels: Vec<usize> = Vec::new();
    for block in blocks(markdown) {
        match block {
            Block::Heading { level, title, line } => {
                p.flush();
                while levels.last().is_some_and(|l| *l >= level) {
                    levels.pop();
                    p.headings.pop();
                }
                levels.push(level);
                p.headings.push(title);
                p.add(&line, false);
            }
            Block::Code(code) => p.add(&code, true),
            Block::Paragraph(text) => p.add(&text, false),
        }
    }
    p.flush();
    p.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(size: usize, overlap: usize) -> ChunkOptions {
        ChunkOptions::new(size, overlap).expect("valid options")
    }

    fn texts(chunks: &[MarkdownChunk]) -> Vec<&str> {
        chunks.iter().map(|c| c.text.as_str()).collect()
    }

    #[test]
    fn empty_markdown_has_no_chunks() {
        assert!(chunk_markdown("", &opts(50, 5)).is_empty());
        assert!(chunk_markdown("\n\n  \n", &opts(50, 5)).is_empty());
    }

    #[test]
    fn sections_are_chunked_apart_with_their_heading_path() {
        let md = "Intro text.\n\n# A\n\nAlpha.\n\n## B\n\nBeta.\n\n# C\nGamma.";
        let chunks = chunk_markdown(md, &opts(100, 0));
        assert_eq!(
            texts(&chunks),
            [
                "Intro text.",
                "# A\n\nAlpha.",
                "## B\n\nBeta.",
                "# C\n\nGamma."
            ]
        );
        let paths: Vec<Vec<String>> = chunks.iter().map(|c| c.headings.clone()).collect();
        assert_eq!(
            paths,
            [
                vec![],
                vec!["A".to_string()],
                vec!["A".into(), "B".into()],
                vec!["C".into()]
            ]
        );
    }

    #[test]
    fn paragraphs_are_packed_while_they_fit() {
        let md = "# T\n\none one.\n\ntwo two.\n\nthree three.";
        assert_eq!(
            texts(&chunk_markdown(md, &opts(25, 0))),
            ["# T\n\none one.\n\ntwo two.", "three three."]
        );
    }

    #[test]
    fn code_fences_are_never_cut_and_hide_headings() {
        let code = "```rust\n# not a heading\nfn main() {\n\n    println!(\"hi\");\n}\n```";
        let md = format!("# Code\n\nBefore.\n\n{code}\n\nAfter.");
        let chunks = chunk_markdown(&md, &opts(20, 5));
        assert!(texts(&chunks).contains(&code), "{chunks:?}");
        assert!(chunks.iter().all(|c| c.headings == ["Code"]));
        // Only the code chunk is over the size.
        for c in &chunks {
            assert!(c.text == code || c.text.chars().count() <= 20, "{c:?}");
        }
        // A tilde fence, unclosed: runs to the end.
        let md = "~~~\n# x\n\ny";
        assert_eq!(texts(&chunk_markdown(md, &opts(100, 0))), [md]);
    }

    #[test]
    fn a_long_paragraph_is_split_as_text() {
        let md = "## Long\n\nFirst sentence here. Second sentence here. Third sentence here.";
        let chunks = chunk_markdown(md, &opts(30, 0));
        assert_eq!(
            texts(&chunks),
            [
                "## Long\n\nFirst sentence here.",
                "Second sentence here.",
                "Third sentence here."
            ]
        );
        assert!(chunks.iter().all(|c| c.headings == ["Long"]));
    }

    #[test]
    fn heading_syntax() {
        assert_eq!(heading("## Title ##"), Some((2, "Title".into())));
        assert_eq!(heading("# C#"), Some((1, "C#".into())));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("####### seven"), None);
        assert_eq!(heading("    # indented code"), None);
        assert_eq!(heading("#"), Some((1, String::new())));
    }

    proptest::proptest! {
        #[test]
        fn chunks_keep_everything_and_fit_unless_code(
            lines in proptest::collection::vec("(#{1,3} [a-z]{1,8}|```|[a-z .]{0,30}|)", 0..30),
            size in 8usize..60,
        ) {
            let md = lines.join("\n");
            let chunks = chunk_markdown(&md, &opts(size, 0));
            let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            let joined: String = chunks.iter().map(|c| c.text.as_str()).collect();
            proptest::prop_assert_eq!(squash(&joined), squash(&md));
            for c in &chunks {
                proptest::prop_assert!(c.text.contains("```") || c.text.chars().count() <= size, "{:?}", c);
            }
        }
    }
}
