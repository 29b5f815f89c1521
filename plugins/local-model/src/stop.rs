//! Stop sequences over streamed text: text is released only once it cannot
//! be the start of a stop sequence, so a stop sequence never reaches the
//! caller, not even split across chunks.

/// Accumulates decoded text and tells what may be sent on.
#[derive(Debug, Default)]
pub(crate) struct StopScanner {
    stops: Vec<String>,
    text: String,
    released: usize,
}

/// What one push released.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Released {
    /// Text now safe to send.
    pub text: String,
    /// Whether a stop sequence was found (the answer ends before it).
    pub stopped: bool,
}

impl StopScanner {
    /// A scanner for `stops` (none: every push releases everything).
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops,
            ..Self::default()
        }
    }

    /// Adds decoded text.
    pub fn push(&mut self, piece: &str) -> Released {
        // A stop may begin in text already held back: search from the
        // oldest unreleased byte.
        let search_from = self.released;
        self.text.push_str(piece);
        let found = self
            .stops
            .iter()
            .filter_map(|s| self.text[search_from..].find(s.as_str()))
            .min();
        if let Some(at) = found {
            let end = search_from + at;
            let text = self.text[self.released..end].to_owned();
            self.text.truncate(end);
            self.released = end;
            return Released {
                text,
                stopped: true,
            };
        }
        let held = self.held_back();
        let end = self.text.len() - held;
        let text = self.text[self.released..end].to_owned();
        self.released = end;
        Released {
            text,
            stopped: false,
        }
    }

    /// The text held back at the end of the answer (no stop followed it).
    pub fn finish(&mut self) -> String {
        let text = self.text[self.released..].to_owned();
        self.released = self.text.len();
        text
    }

    /// The whole answer so far, stop sequence excluded.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Length of the longest end of the text that begins some stop sequence.
    fn held_back(&self) -> usize {
        let unreleased = &self.text[self.released..];
        self.stops
            .iter()
            .flat_map(|stop| {
                stop.char_indices()
                    .skip(1)
                    .map(|(i, _)| i)
                    .filter(|&i| unreleased.ends_with(&stop[..i]))
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (Vec<String>, bool, String) {
        let mut s = StopScanner::new(stops.iter().map(|s| s.to_string()).collect());
        let mut out = Vec::new();
        for p in pieces {
            let r = s.push(p);
            out.push(r.text);
            if r.stopped {
                return (out, true, s.text().to_owned());
            }
        }
        out.push(s.finish());
        (out, false, s.text().to_owned())
    }

    #[test]
    fn no_stops_release_everything() {
        let (out, stopped, all) = run(&[], &["a", "b"]);
        assert_eq!(out, ["a", "b", ""]);
        assert!(!stopped);
        assert_eq!(all, "ab");
    }

    #[test]
    fn a_stop_split_across_pieces_is_never_sent() {
        let (out, stopped, all) = run(&["END"], &["hello E", "N", "D more"]);
        assert_eq!(out, ["hello ", "", ""]);
        assert!(stopped);
        assert_eq!(all, "hello ");
    }

    #[test]
    fn a_false_start_is_released_later() {
        let (out, stopped, all) = run(&["END"], &["x E", "Nd", "!"]);
        assert_eq!(out, ["x ", "ENd", "!", ""]);
        assert!(!stopped);
        assert_eq!(all, "x ENd!");
    }

    #[test]
    fn held_text_is_released_at_the_end() {
        let (out, _, _) = run(&["\n\n"], &["a\n"]);
        assert_eq!(out, ["a", "\n"]);
    }

    #[test]
    fn multibyte_stops_hold_back_on_char_boundaries() {
        let (out, stopped, all) = run(&["é!"], &["café", "!"]);
        assert_eq!(out, ["caf", ""]);
        assert!(stopped);
        assert_eq!(all, "caf");
    }
}
