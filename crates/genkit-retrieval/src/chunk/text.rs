//! Plain text: chunks end at paragraph breaks where they can, else at
//! sentence ends, else between words, else (one word longer than a chunk)
//! anywhere.

use super::ChunkOptions;

/// How good a place to end a chunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Break {
    Word = 0,
    Sentence = 1,
    Paragraph = 2,
}

/// Sentence-ending punctuation: after it (and any closing quotes or
/// brackets) whitespace ends the sentence.
fn ends_sentence(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…' | '。' | '！' | '？' | '．')
}

/// Full-width terminators end a sentence with no space after them.
fn ends_sentence_unspaced(c: char) -> bool {
    matches!(c, '。' | '！' | '？')
}

fn closes(c: char) -> bool {
    matches!(c, '"' | '\'' | ')' | ']' | '»' | '”' | '’' | '」' | '』')
}

struct Text<'a> {
    text: &'a str,
    chars: Vec<(usize, char)>,
}

impl Text<'_> {
    fn len(&self) -> usize {
        self.chars.len()
    }

    fn c(&self, i: usize) -> char {
        self.chars[i].1
    }

    fn byte(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.text.len(), |(b, _)| *b)
    }

    fn ws(&self, i: usize) -> bool {
        self.c(i).is_whitespace()
    }

    fn skip_ws(&self, mut i: usize) -> usize {
        while i < self.len() && self.ws(i) {
            i += 1;
        }
        i
    }

    /// Whether a chunk may end before char `i` (`0 < i <= len`), and how well.
    fn break_at(&self, i: usize) -> Option<Break> {
        if i == self.len() {
            return Some(Break::Paragraph);
        }
        let prev = self.c(i - 1);
        if !self.ws(i) {
            return (ends_sentence_unspaced(prev)).then_some(Break::Sentence);
        }
        if prev.is_whitespace() {
            return None;
        }
        // A blank line ahead: a paragraph break.
        let mut j = i;
        let mut newlines = 0;
        while j < self.len() && self.ws(j) {
            if self.c(j) == '\n' {
                newlines += 1;
            }
            j += 1;
        }
        if newlines >= 2 {
            return Some(Break::Paragraph);
        }
        let mut k = i - 1;
        while k > 0 && closes(self.c(k)) {
            k -= 1;
        }
        if ends_sentence(self.c(k)) {
            Some(Break::Sentence)
        } else {
            Some(Break::Word)
        }
    }

    /// Whether a word starts at char `i`.
    fn word_start(&self, i: usize) -> bool {
        i > 0 && i < self.len() && !self.ws(i) && self.ws(i - 1)
    }

    fn slice(&self, from: usize, to: usize) -> &str {
        self.text[self.byte(from)..self.byte(to)].trim()
    }
}

/// Splits `text` into chunks of at most `opts.size()` characters.
///
/// A chunk ends at the last paragraph break that keeps it within the size
/// (unless that leaves it less than half full and a sentence ends later),
/// else the last sentence end, else the last space; a word longer than a
/// chunk is cut. Each chunk after the first starts with up to
/// `opts.overlap()` characters of the one before: whole words where the
/// chunk ended between words, the last characters where a word was cut.
/// Chunks are trimmed; an empty or blank text has none.
pub fn chunk_text(text: &str, opts: &ChunkOptions) -> Vec<String> {
    let t = Text {
        text,
        chars: text.char_indices().collect(),
    };
    let n = t.len();
    let (size, overlap) = (opts.size(), opts.overlap());
    let mut out = Vec::new();
    let mut start = t.skip_ws(0);
    // Every chunk ends after the one before, so the loop ends.
    let mut min_end = start + 1;
    while start < n {
        let limit = start + size;
        if limit >= n {
            let rest = t.slice(start, n);
            if !rest.is_empty() {
                out.push(rest.to_owned());
            }
            break;
        }
        // The last place of each kind within the size.
        let mut last = [None::<usize>; 3];
        for i in min_end.max(start + 1)..=limit {
            if let Some(b) = t.break_at(i) {
                last[b as usize] = Some(i);
            }
        }
        let [word, sentence, paragraph] = last;
        // A paragraph break in the first half of the chunk gives way to a
        // sentence end in the second half (a heading would otherwise be a
        // chunk of its own).
        let half = |i: usize| (i - start) * 2 >= size;
        let best = match (paragraph, sentence) {
            (Some(p), Some(s)) if s > p && !half(p) && half(s) => Some(s),
            (Some(p), _) => Some(p),
            (None, s) => s.or(word),
        };
        let (end, cut) = match best {
            Some(i) => (i, false),
            None => (limit, true),
        };
        let chunk = t.slice(start, end);
        if !chunk.is_empty() {
            out.push(chunk.to_owned());
        }
        let from = end.saturating_sub(overlap).max(start + 1);
        let next = if overlap == 0 {
            end
        } else if cut {
            from
        } else {
            (from..end).find(|&i| t.word_start(i)).unwrap_or(end)
        };
        start = t.skip_ws(next);
        min_end = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(size: usize, overlap: usize) -> ChunkOptions {
        ChunkOptions::new(size, overlap).expect("valid options")
    }

    #[test]
    fn empty_and_blank_texts_have_no_chunks() {
        assert!(chunk_text("", &opts(10, 2)).is_empty());
        assert!(chunk_text(" \n\t \n", &opts(10, 2)).is_empty());
    }

    #[test]
    fn a_short_text_is_one_chunk() {
        assert_eq!(
            chunk_text("  Hello there.  ", &opts(100, 10)),
            ["Hello there."]
        );
    }

    #[test]
    fn overlap_not_below_size_is_refused() {
        for (size, overlap) in [(10, 10), (10, 11), (0, 0)] {
            let err = ChunkOptions::new(size, overlap).expect_err("refused");
            assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
        }
        let err = ChunkOptions::new(5, 7).expect_err("refused");
        assert!(err.message().contains("overlap (7)") && err.message().contains("size (5)"));
    }

    #[test]
    fn chunks_end_at_sentences_before_words() {
        let text = "Alpha beta gamma. Delta epsilon zeta eta. Theta.";
        assert_eq!(
            chunk_text(text, &opts(30, 0)),
            ["Alpha beta gamma.", "Delta epsilon zeta eta. Theta."]
        );
    }

    #[test]
    fn paragraph_breaks_beat_sentences() {
        let text = "One. Two.\n\nThree four five six.";
        assert_eq!(
            chunk_text(text, &opts(25, 0)),
            ["One. Two.", "Three four five six."]
        );
    }

    #[test]
    fn a_sentence_longer_than_a_chunk_splits_between_words() {
        let text = "aaa bbb ccc ddd eee fff";
        assert_eq!(
            chunk_text(text, &opts(8, 0)),
            ["aaa bbb", "ccc ddd", "eee fff"]
        );
        // Overlap repeats whole words.
        assert_eq!(
            chunk_text(text, &opts(8, 4)),
            ["aaa bbb", "bbb ccc", "ccc ddd", "ddd eee", "eee fff"]
        );
    }

    #[test]
    fn one_huge_word_is_cut_with_character_overlap() {
        let word = "x".repeat(25);
        let chunks = chunk_text(&word, &opts(10, 3));
        assert_eq!(
            chunks.iter().map(String::len).collect::<Vec<_>>(),
            [10, 10, 10, 4]
        );
        assert_eq!(chunks.concat().len(), 25 + 3 * 3);
    }

    #[test]
    fn unicode_is_counted_in_characters_and_never_split_inside_one() {
        let text = "Привет мир. Это тест. 日本語の文です。次の文です。";
        for size in 1..20 {
            for overlap in [0, size / 2] {
                for chunk in chunk_text(text, &opts(size, overlap)) {
                    assert!(chunk.chars().count() <= size, "{chunk:?} over {size}");
                }
            }
        }
        assert_eq!(
            chunk_text("日本語の文です。次の文です。", &opts(10, 0)),
            ["日本語の文です。", "次の文です。"]
        );
        assert_eq!(chunk_text("ééé ààà", &opts(3, 0)), ["ééé", "ààà"]);
    }

    #[test]
    fn closing_quotes_stay_with_their_sentence() {
        let text = "He said \"stop.\" Then left the room.";
        assert_eq!(
            chunk_text(text, &opts(20, 0)),
            ["He said \"stop.\"", "Then left the room."]
        );
    }

    proptest::proptest! {
        #[test]
        fn chunks_fit_and_cover_the_text(
            text in "[a-zé日 .!?\n]{0,200}",
            size in 1usize..40,
            overlap_frac in 0usize..100,
        ) {
            let overlap = overlap_frac * size / 100;
            let o = opts(size, overlap.min(size - 1));
            let chunks = chunk_text(&text, &o);
            for c in &chunks {
                proptest::prop_assert!(c.chars().count() <= size);
                proptest::prop_assert!(!c.trim().is_empty());
            }
            if o.overlap() == 0 {
                let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
                proptest::prop_assert_eq!(squash(&chunks.concat()), squash(&text));
            }
        }
    }
}
