//! Wall-clock strings for session files: ids and RFC 3339 times.
//!
//! Everything written to disk is UTC, so files read the same on every
//! machine; only `zut sessions` converts to local time for display.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A calendar date and time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// Seconds since the Unix epoch (0 for times before it).
pub fn unix_seconds(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The UTC calendar time of `secs` since the epoch (proleptic Gregorian,
/// days-to-civil after Howard Hinnant's public-domain algorithm).
pub fn utc(secs: i64) -> Civil {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: (rem / 3600) as u32,
        minute: (rem % 3600 / 60) as u32,
        second: (rem % 60) as u32,
    }
}

/// The local calendar time of `secs` (the C library's time zone rules);
/// UTC when the conversion fails.
pub fn local(secs: i64) -> Civil {
    let t = secs as libc::time_t;
    // SAFETY: `tm` is plain data that localtime_r fills in; both pointers
    // are valid for the call, and the reentrant variant touches no statics
    // we share.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if !ok {
        return utc(secs);
    }
    Civil {
        year: i64::from(tm.tm_year) + 1900,
        month: (tm.tm_mon + 1) as u32,
        day: tm.tm_mday as u32,
        hour: tm.tm_hour as u32,
        minute: tm.tm_min as u32,
        second: tm.tm_sec as u32,
    }
}

/// `2024-05-01T12:03:04Z`.
pub fn rfc3339(secs: i64) -> String {
    let c = utc(secs);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// Parses what [`rfc3339`] writes back into seconds since the epoch.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // civil-to-days, the inverse of `utc`.
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + se)
}

/// A new session id: `YYYYMMDD-HHMMSS-xxxx` in UTC, sortable by creation
/// second; the four hex digits tell apart sessions of the same second
/// (`attempt` varies them when a name is already taken).
pub fn session_id(now: SystemTime, attempt: u32) -> String {
    let c = utc(unix_seconds(now));
    let nanos = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .subsec_nanos();
    let mut h = Fnv::new();
    h.write(&nanos.to_le_bytes());
    h.write(&std::process::id().to_le_bytes());
    h.write(&attempt.to_le_bytes());
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{:04x}",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        h.finish() & 0xffff
    )
}

/// FNV-1a, 64 bit: a hash whose values never change between builds or
/// Rust versions, so directory names derived from it stay put.
pub struct Fnv(u64);

impl Fnv {
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv {
    fn default() -> Self {
        Fnv::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_round_trips_through_rfc3339() {
        for secs in [0, 951_782_400, 1_714_564_984, 4_102_444_799] {
            assert_eq!(parse_rfc3339(&rfc3339(secs)), Some(secs), "{secs}");
        }
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_714_564_984), "2024-05-01T12:03:04Z");
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn ids_sort_by_time_and_are_file_safe() {
        let a = session_id(UNIX_EPOCH + Duration::from_secs(1_714_564_984), 0);
        let b = session_id(UNIX_EPOCH + Duration::from_secs(1_714_564_985), 0);
        assert!(a.starts_with("20240501-120304-"), "{a}");
        assert!(a < b);
        assert_eq!(a.len(), 20);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'));
        assert_ne!(
            session_id(UNIX_EPOCH, 0),
            session_id(UNIX_EPOCH, 1),
            "attempts differ"
        );
    }
}
