//! The `date` filter: JavaScript's `Date` as the reference uses it —
//! epoch milliseconds or the ECMAScript date-time string format (and RFC
//! 2822) in, `toISOString` or a `YYYY MM DD HH mm ss` pattern out, in UTC.

use super::{string_val, JsVal};
use crate::commands::js::js_trim;
use crate::error::Result;
use serde_json::Value;

const MS_PER_DAY: i64 = 86_400_000;
const MAX_TIME: f64 = 8.64e15;

/// Days since 1970-01-01 for a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month 1-12, day 1-31) for days since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `TimeClip`: NaN outside ±8.64e15, else truncated toward zero.
fn time_clip(t: f64) -> Option<i64> {
    (t.is_finite() && t.abs() <= MAX_TIME).then(|| t.trunc() as i64)
}

/// Parse the ECMAScript date-time string format (and the common
/// space-separated variant and RFC 2822). Times without an offset are read
/// as UTC.
fn parse_date(s: &str) -> Option<i64> {
    if let Some(t) = parse_iso(s) {
        return Some(t);
    }
    chrono::DateTime::parse_from_rfc2822(s)
        .ok()
        .map(|d| d.timestamp_millis())
        .and_then(|t| time_clip(t as f64))
}

fn parse_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let mut i = 0;
    let num = |i: &mut usize, n: usize| -> Option<i64> {
        let part = b.get(*i..*i + n)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        *i += n;
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = match b.first()? {
        b'+' | b'-' => {
            let neg = b[0] == b'-';
            i = 1;
            let y = num(&mut i, 6)?;
            if neg && y == 0 {
                return None;
            }
            if neg {
                -y
            } else {
                y
            }
        }
        _ => num(&mut i, 4)?,
    };
    let (mut month, mut day) = (1, 1);
    if b.get(i) == Some(&b'-') {
        i += 1;
        month = num(&mut i, 2)?;
        if b.get(i) == Some(&b'-') {
            i += 1;
            day = num(&mut i, 2)?;
        }
    }
    // V8 accepts any day 1-31 and lets it overflow into the next month.
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (mut h, mut mi, mut sec, mut ms) = (0, 0, 0, 0);
    let mut offset_min = 0;
    if matches!(b.get(i), Some(b'T' | b't' | b' ')) {
        i += 1;
        h = num(&mut i, 2)?;
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        mi = num(&mut i, 2)?;
        if b.get(i) == Some(&b':') {
            i += 1;
            sec = num(&mut i, 2)?;
            if b.get(i) == Some(&b'.') {
                i += 1;
                let start = i;
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                let frac = s.get(start..i)?;
                if frac.is_empty() {
                    return None;
                }
                let padded: String = frac.chars().chain("000".chars()).take(3).collect();
                ms = padded.parse().ok()?;
            }
        }
        match b.get(i) {
            Some(b'Z' | b'z') => i += 1,
            Some(sign @ (b'+' | b'-')) => {
                let neg = *sign == b'-';
                i += 1;
                let oh = num(&mut i, 2)?;
                if b.get(i) != Some(&b':') {
                    return None;
                }
                i += 1;
                let om = num(&mut i, 2)?;
                if oh > 23 || om > 59 {
                    return None;
                }
                offset_min = if neg { -(oh * 60 + om) } else { oh * 60 + om };
            }
            _ => {}
        }
        let valid = (h < 24 && mi < 60 && sec < 60) || (h == 24 && mi == 0 && sec == 0 && ms == 0);
        if !valid {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    let t = days_from_civil(year, month, day) * MS_PER_DAY
        + ((h * 60 + mi - offset_min) * 60 + sec) * 1000
        + ms;
    time_clip(t as f64)
}

struct UtcParts {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    ms: i64,
}

fn utc_parts(t: i64) -> UtcParts {
    let days = t.div_euclid(MS_PER_DAY);
    let rem = t.rem_euclid(MS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    UtcParts {
        year,
        month,
        day,
        hour: rem / 3_600_000,
        minute: rem / 60_000 % 60,
        second: rem / 1000 % 60,
        ms: rem % 1000,
    }
}

/// `Date.prototype.toISOString`.
fn iso_string(t: i64) -> String {
    let p = utc_parts(t);
    let year = if (0..=9999).contains(&p.year) {
        format!("{:04}", p.year)
    } else if p.year < 0 {
        format!("-{:06}", -p.year)
    } else {
        format!("+{:06}", p.year)
    };
    format!(
        "{year}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        p.month, p.day, p.hour, p.minute, p.second, p.ms
    )
}

/// The `date` filter.
pub(super) fn format_date(v: &JsVal, fmt: Option<&str>) -> Result<JsVal> {
    let epoch_ms = match v {
        JsVal::Json(Value::Number(_)) | JsVal::NonFinite(_) => true,
        JsVal::Json(Value::String(s)) => {
            let t = js_trim(s);
            !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    };
    let time = if epoch_ms {
        time_clip(v.to_number())
    } else {
        parse_date(&v.js_string())
    };
    let Some(t) = time else {
        return Ok(string_val(v.js_string()));
    };
    let Some(fmt) = fmt.filter(|f| !f.is_empty()) else {
        return Ok(string_val(iso_string(t)));
    };
    let p = utc_parts(t);
    let mut out = fmt.to_string();
    for (pat, val) in [
        ("YYYY", p.year.to_string()),
        ("MM", format!("{:02}", p.month)),
        ("DD", format!("{:02}", p.day)),
        ("HH", format!("{:02}", p.hour)),
        ("mm", format!("{:02}", p.minute)),
        ("ss", format!("{:02}", p.second)),
    ] {
        out = out.replacen(pat, &val, 1);
    }
    Ok(string_val(out))
}
