//! Trace and span identifiers.

use std::fmt;

/// A 128-bit trace id, shown as 32 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(u128);

/// A 64-bit span id, shown as 16 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(u64);

impl TraceId {
    /// A random, non-zero id.
    pub fn random() -> Self {
        loop {
            let v: u128 = rand::random();
            if v != 0 {
                return Self(v);
            }
        }
    }

    /// The id as a number.
    pub fn as_u128(self) -> u128 {
        self.0
    }

    /// Parses 32 hex digits.
    pub fn parse(s: &str) -> Option<Self> {
        (s.len() == 32)
            .then(|| u128::from_str_radix(s, 16).ok())
            .flatten()
            .map(Self)
    }
}

impl SpanId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// A random, non-zero id.
    pub fn random() -> Self {
        loop {
            let v: u64 = rand::random();
            if v != 0 {
                return Self(v);
            }
        }
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fixed_width_hex() {
        let t = TraceId::random().to_string();
        let s = SpanId::random().to_string();
        assert_eq!(t.len(), 32);
        assert_eq!(s.len(), 16);
        assert!(
            t.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(TraceId::parse(&t).map(|x| x.to_string()), Some(t));
        assert!(TraceId::parse("xyz").is_none());
    }
}
