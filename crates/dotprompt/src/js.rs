//! JavaScript's conversions, where Dotprompt's output depends on them:
//! numbers as `String(n)` prints them, and `JSON.stringify`.

use std::fmt::Write as _;
use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
use serde_json::{Number, Value};

/// Writes `n` as JavaScript's `String(n)` does: integers in full (also
/// beyond 2^53, where JavaScript would have rounded), other values in the
/// shortest form that reads back, with an exponent (`1e+21`, `1.5e-7`)
/// outside 1e-6..1e21, and `-0` as `0`.
pub(crate) fn write_number(out: &mut String, n: &Number) {
    if let Some(u) = n.as_u64() {
        write_u64(out, u);
    } else if let Some(i) = n.as_i64() {
        out.push('-');
        write_u64(out, i.unsigned_abs());
    } else if let Some(f) = n.as_f64() {
        write_f64(out, f);
    } else {
        let _ = write!(out, "{n}");
    }
}

fn write_f64(out: &mut String, f: f64) {
    if f == 0.0 {
        out.push('0');
    } else if (1e-6..1e21).contains(&f.abs()) {
        let _ = write!(out, "{f}");
    } else {
        // Rust writes `1e21` and `1.5e-7`; JavaScript signs the exponent.
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                let _ = write!(out, "{mantissa}e+{exp}");
            }
            _ => out.push_str(&text),
        }
    }
}

/// Prints an integer (the formatting machinery is slow for this).
#[inline]
pub(crate) fn write_u64(out: &mut String, n: u64) {
    // One and two digits, the most printed (indexes, counts, scores):
    // pushed as the ASCII digits they are, where they are printed.
    if n < 10 {
        out.push(char::from(b'0' + n as u8));
    } else if n < 100 {
        out.push(char::from(b'0' + (n / 10) as u8));
        out.push(char::from(b'0' + (n % 10) as u8));
    } else {
        write_long(out, n);
    }
}

/// [`write_u64`] from three digits on.
#[inline(never)]
fn write_long(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // `n % 10` is below 10, so this is an ASCII digit.
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Pushed one by one: the numbers printed are mostly a few digits, for
    // which this is cheaper than validating them as UTF-8 and appending.
    out.reserve(digits.len() - at);
    for &digit in &digits[at..] {
        out.push(char::from(digit));
    }
}

/// `JSON.stringify(value, null, indent)`: compact without an indent, else
/// one member per line; numbers as JavaScript prints them.
pub(crate) fn stringify(value: &Value, indent: &str) -> serde_json::Result<String> {
    let mut buf = Vec::new();
    if indent.is_empty() {
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, JsNumbers(CompactFormatter));
        value.serialize(&mut ser)?;
    } else {
        let pretty = PrettyFormatter::with_indent(indent.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, JsNumbers(pretty));
        value.serialize(&mut ser)?;
    }
    // The serializer writes only valid UTF-8.
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// A JSON formatter writing floats as JavaScript does, layout from `F`.
struct JsNumbers<F>(F);

impl<F: Formatter> Formatter for JsNumbers<F> {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        let mut text = String::new();
        write_f64(&mut text, value);
        writer.write_all(text.as_bytes())
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_key(writer)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn number(v: Value) -> String {
        let mut out = String::new();
        write_number(&mut out, v.as_number().expect("a number"));
        out
    }

    #[test]
    fn numbers_print_as_in_javascript() {
        for (value, js) in [
            (json!(0), "0"),
            (json!(-0.0), "0"),
            (json!(1.5), "1.5"),
            (json!(-2), "-2"),
            (json!(3.0), "3"),
            (json!(0.1 + 0.2), "0.30000000000000004"),
            (json!(1e21), "1e+21"),
            (json!(1.5e300), "1.5e+300"),
            (json!(1e20), "100000000000000000000"),
            (json!(0.000001), "0.000001"),
            (json!(1e-7), "1e-7"),
            (json!(-2.5e-8), "-2.5e-8"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(i64::MIN), "-9223372036854775808"),
        ] {
            assert_eq!(number(value.clone()), js, "{value}");
        }
    }

    #[test]
    fn stringify_as_in_javascript() {
        let v = json!({"a": [1, 0.000001, 1e21, {}], "b": {"c": null}, "d": []});
        assert_eq!(
            stringify(&v, "").expect("json"),
            r#"{"a":[1,0.000001,1e+21,{}],"b":{"c":null},"d":[]}"#
        );
        assert_eq!(
            stringify(&v, "  ").expect("json"),
            "{\n  \"a\": [\n    1,\n    0.000001,\n    1e+21,\n    {}\n  ],\n  \"b\": {\n    \"c\": null\n  },\n  \"d\": []\n}"
        );
    }
}
