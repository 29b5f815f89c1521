//! Snapshot timestamps as Genkit JS writes them (RFC 3339 in UTC with
//! milliseconds, JavaScript's `toISOString`), and what they mean for a
//! detached turn's heartbeat.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::types::{SessionSnapshot, SnapshotStatus};

/// The current time as JavaScript's `toISOString` writes it
/// (`2026-12-01T05:38:31.123Z`), for snapshot timestamps.
pub fn now_rfc3339() -> String {
    rfc3339_at(SystemTime::now())
}

/// `time` as [`now_rfc3339`] writes it (a lease's expiry, say).
pub fn rfc3339_at(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    format_rfc3339_millis(since.as_millis())
}

fn format_rfc3339_millis(millis: u128) -> String {
    let secs = millis / 1000;
    let ms = millis % 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let year4 = match u16::try_from(year) {
        Ok(y) if y <= 9999 => y,
        // Outside four digits: every digit kept, by `format!`.
        _ => return format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z"),
    };
    // By hand: `format!` costs about ten times as much, and every snapshot
    // written stamps one or two of these.
    let mut out = String::with_capacity(24);
    // Every field fits its width (month, day < 100; h, m, s < 60; ms < 1000).
    let fields = [
        (u64::from(year4), 4, '-'),
        (month as u64, 2, '-'),
        (day as u64, 2, 'T'),
        (h as u64, 2, ':'),
        (m as u64, 2, ':'),
        (s as u64, 2, '.'),
        (ms as u64, 3, 'Z'),
    ];
    for (value, width, after) in fields {
        for place in (0..width).rev() {
            let digit = (value / 10u64.pow(place)) % 10;
            out.push(char::from(b'0' + digit as u8));
        }
        out.push(after);
    }
    out
}

/// How often Genkit JS refreshes a detached turn's heartbeat.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);

/// How old a pending snapshot's heartbeat may get before reads report it
/// `expired` (Genkit JS's default).
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(60);

/// The status a read reports: `expired` for a pending snapshot whose lease
/// lapsed at `now` (its worker is presumed dead and can no longer record an
/// outcome), else the stored status.
///
/// A snapshot written with a lease (`leaseExpiresAt`, see
/// [`store::lease`](crate::store::lease)) expires when its lease does; one
/// without (written by Genkit JS, or before leases) when its heartbeat is
/// older than `timeout`. A missing or unreadable heartbeat never expires, as
/// in Genkit JS.
pub fn effective_status(
    snapshot: &SessionSnapshot,
    now: SystemTime,
    timeout: Duration,
) -> Option<SnapshotStatus> {
    let status = snapshot.status?;
    if status != SnapshotStatus::Pending {
        return Some(status);
    }
    let now_ms = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i128);
    if let Some(expires) = snapshot
        .lease_expires_at
        .as_deref()
        .and_then(parse_rfc3339_millis)
    {
        return Some(if now_ms > expires {
            SnapshotStatus::Expired
        } else {
            status
        });
    }
    let beat = snapshot
        .heartbeat_at
        .as_deref()
        .and_then(parse_rfc3339_millis);
    match beat {
        Some(beat) if now_ms - beat > timeout.as_millis() as i128 => Some(SnapshotStatus::Expired),
        _ => Some(status),
    }
}

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp
/// (`2026-12-01T05:38:31.123Z`, `...+02:00`); `None` if it is not one.
pub fn parse_rfc3339_millis(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().try_fold(0i64, |acc, d| {
            d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0'))
        })
    };
    let sep = |at: usize, one_of: &[u8]| b.get(at).is_some_and(|c| one_of.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0i64;
    if sep(at, b".") {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return None;
        }
        // Milliseconds: the first three fraction digits.
        let frac = b.get(start..at.min(start + 3))?;
        millis = frac.iter().fold(0, |acc, d| acc * 10 + i64::from(d - b'0'))
            * 10i64.pow(3 - frac.len() as u32);
    }
    let offset_minutes = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == b.len() && sep(at + 3, b":") => {
            let m = num(at + 1, 2)? * 60 + num(at + 4, 2)?;
            if *sign == b'+' { m } else { -m }
        }
        _ => return None,
    };
    // Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(i128::from(secs) * 1000 + i128::from(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_look_like_javascripts() {
        assert_eq!(format_rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_rfc3339_millis(1_796_103_511_123),
            "2026-12-01T05:38:31.123Z"
        );
        assert_eq!(
            format_rfc3339_millis(951_782_400_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(now_rfc3339().len(), 24);
    }

    #[test]
    fn timestamps_have_every_field_at_its_width() {
        let mut ms = 0u128;
        // Days across several centuries (leap years, century years), at
        // odd times of day; the parser reads them back independently.
        while ms < 8_000_000_000_000 {
            let text = format_rfc3339_millis(ms);
            assert_eq!(text.len(), 24, "{text}");
            assert_eq!(parse_rfc3339_millis(&text), Some(ms as i128), "{text}");
            ms += 86_400_000 * 37 + 3_599_999;
        }
        // Years past 9999 keep every digit.
        assert_eq!(
            format_rfc3339_millis(253_402_300_800_000),
            "10000-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn timestamps_parse_back() {
        for ms in [0u128, 951_782_400_000, 1_796_103_511_123, 4_102_444_800_999] {
            assert_eq!(
                parse_rfc3339_millis(&format_rfc3339_millis(ms)),
                Some(ms as i128)
            );
        }
        assert_eq!(
            parse_rfc3339_millis("2026-12-01T07:38:31.1+02:00"),
            Some(1_796_103_511_100)
        );
        assert_eq!(
            parse_rfc3339_millis("2026-12-01T05:38:31Z"),
            Some(1_796_103_511_000)
        );
        for bad in [
            "",
            "yesterday",
            "2026-12-01",
            "2026-13-01T00:00:00Z",
            "2026-12-01T00:00:00",
            "2026-12-01T00:00:00.Z",
            "2026-12-01T00:00:00Zjunk",
            "2026-12-01T00:00:00+0200",
            "２026-12-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339_millis(bad), None, "{bad}");
        }
    }

    #[test]
    fn stale_heartbeats_read_as_expired() {
        let mut s = SessionSnapshot::new("p", "2026-12-01T05:00:00.000Z");
        s.status = Some(SnapshotStatus::Pending);
        s.heartbeat_at = Some("2026-12-01T05:00:00.000Z".into());
        let at = |secs: u64| {
            UNIX_EPOCH + Duration::from_millis(1_796_101_200_000) + Duration::from_secs(secs)
        };
        assert_eq!(
            effective_status(&s, at(60), HEARTBEAT_TIMEOUT),
            Some(SnapshotStatus::Pending)
        );
        assert_eq!(
            effective_status(&s, at(61), HEARTBEAT_TIMEOUT),
            Some(SnapshotStatus::Expired)
        );
        s.heartbeat_at = Some("not a time".into());
        assert_eq!(
            effective_status(&s, at(600), HEARTBEAT_TIMEOUT),
            Some(SnapshotStatus::Pending)
        );
        s.status = Some(SnapshotStatus::Completed);
        s.heartbeat_at = Some("2026-12-01T05:00:00.000Z".into());
        assert_eq!(
            effective_status(&s, at(600), HEARTBEAT_TIMEOUT),
            Some(SnapshotStatus::Completed)
        );
    }

    #[test]
    fn a_lease_expires_when_it_says_not_by_the_readers_timeout() {
        let mut s = SessionSnapshot::new("p", "2026-12-01T05:00:00.000Z");
        s.status = Some(SnapshotStatus::Pending);
        s.heartbeat_at = Some("2026-12-01T05:00:00.000Z".into());
        s.lease_expires_at = Some("2026-12-01T05:00:05.000Z".into());
        let at = |secs: u64| {
            UNIX_EPOCH + Duration::from_millis(1_796_101_200_000) + Duration::from_secs(secs)
        };
        assert_eq!(
            effective_status(&s, at(5), HEARTBEAT_TIMEOUT),
            Some(SnapshotStatus::Pending)
        );
        assert_eq!(
            effective_status(&s, at(6), HEARTBEAT_TIMEOUT),
            Some(SnapshotStatus::Expired),
            "the lease, not the 60 s heartbeat timeout, decides"
        );
        assert_eq!(rfc3339_at(at(5)), "2026-12-01T05:00:05.000Z");
    }
}
