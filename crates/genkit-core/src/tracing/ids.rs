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

    /// The 32 lower-case hex digits, without allocating.
    pub fn to_hex(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        hex_into(self.0, &mut out);
        out
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

    /// The 16 lower-case hex digits, without allocating.
    pub fn to_hex(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        hex_into(u128::from(self.0), &mut out);
        out
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

/// Writes the low `out.len()` hex digits of `value` into `out`.
fn hex_into(value: u128, out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = out.len();
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = DIGITS[((value >> (4 * (n - 1 - i))) & 0xf) as usize];
    }
}

/// The hex digits as text (they are ASCII by construction).
pub(crate) fn hex_str(digits: &[u8]) -> &str {
    std::str::from_utf8(digits).unwrap_or_default()
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(hex_str(&self.to_hex()))
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(hex_str(&self.to_hex()))
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
