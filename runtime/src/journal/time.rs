//! The journal's timestamps: RFC 3339 UTC with milliseconds, written by
//! hand (chrono's formatter cost ten times this, twice per run).

/// Now as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    match since {
        Ok(d) => rfc3339_millis(d.as_millis() as u64),
        // (A clock before 1970.)
        Err(_) => chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }
}

/// `ms` milliseconds after the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`:
/// the text chrono's `to_rfc3339_opts(Millis, true)` gives, written by
/// hand (two of them per run; chrono's formatter costs ten times this).
/// Days to a civil date by Howard Hinnant's `civil_from_days`.
fn rfc3339_millis(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let of_day = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if year > 9999 {
        // (chrono writes a sign and more digits; none of ours get there.)
        return chrono::DateTime::from_timestamp_millis(ms as i64)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_default();
    }
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: u64| {
        for i in (at..at + width).rev() {
            b[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year as u64);
    put(5, 2, month as u64);
    put(8, 2, day as u64);
    put(11, 2, of_day / 3600);
    put(14, 2, of_day / 60 % 60);
    put(17, 2, of_day % 60);
    put(20, 3, ms % 1000);
    String::from_utf8_lossy(&b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written timestamp is chrono's, at the edges of days,
    /// months, leap years and centuries and at random instants.
    #[test]
    fn timestamps_are_chronos_text() {
        let chrono_of = |ms: u64| {
            chrono::DateTime::from_timestamp_millis(ms as i64)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        let mut cases: Vec<u64> = vec![
            0,
            999,
            86_399_999,
            86_400_000,
            951_782_400_000,     // 2000-02-29
            4_107_542_399_999,   // 2100-02-28T23:59:59.999
            4_107_542_400_000,   // 2100-03-01 (not a leap year)
            253_402_300_799_999, // 9999-12-31T23:59:59.999
            253_402_300_800_000, // 10000-01-01: chrono's text
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push(x % 253_402_300_800_000);
        }
        for ms in cases {
            assert_eq!(rfc3339_millis(ms), chrono_of(ms), "at {ms} ms");
        }
        let now = now_rfc3339();
        assert!(chrono::DateTime::parse_from_rfc3339(&now).is_ok(), "{now}");
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 24, "{t}");
        assert!(
            t.ends_with('Z') && t.as_bytes()[10] == b'T' && t.as_bytes()[19] == b'.',
            "{t}"
        );
        chrono::DateTime::parse_from_rfc3339(&t).unwrap();
    }
}
