//! Random ids as Genkit JS mints them (`randomUUID()`): snapshot ids,
//! stream ids, evaluation run ids.

/// A new random UUID (version 4), lowercase with dashes.
pub fn random_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    // Version 4, variant 10xx: an ordinary random UUID.
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            id.push('-');
        }
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_random_version_4() {
        let a = random_uuid();
        assert_ne!(a, random_uuid());
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert!(
            a.chars()
                .enumerate()
                .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) {
                    c == '-'
                } else {
                    c.is_ascii_hexdigit() && !c.is_ascii_uppercase()
                })
        );
    }
}
