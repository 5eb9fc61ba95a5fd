//! When to try a chat request again and how long to wait first: which HTTP statuses are worth a
//! retry, `Retry-After` (seconds or an HTTP date), and exponential backoff with jitter. Pure:
//! the clock and the random draw come in as arguments; the sleeping is the caller's.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// Backoff never grows past this, however many retries are allowed.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The longest `Retry-After` fwfix honours: an endpoint asking for more is treated as down
/// rather than left to stall an unattended run.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// What a status means for the request that got it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    Success,
    /// Timeouts, conflicts, rate limits and server errors: worth another try.
    Transient,
    /// The request itself is wrong (bad request, key, permission, URL): a retry gets the same.
    Permanent,
}

pub fn classify(status: u16) -> StatusClass {
    match status {
        200..=299 => StatusClass::Success,
        408 | 409 | 429 | 500..=599 => StatusClass::Transient,
        _ => StatusClass::Permanent,
    }
}

/// A `Retry-After` header value: delay-seconds, or an HTTP date (a date in the past is no wait).
/// `None` when it is neither.
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = DateTime::parse_from_rfc2822(value)
        .ok()?
        .with_timezone(&Utc);
    Some((when - now).to_std().unwrap_or(Duration::ZERO))
}

/// The wait before retry number `retry` (0 for the first): `base * 2^retry`, capped at
/// [`MAX_BACKOFF`], then spread by `jitter` (a draw in `[0, 1)`) over its upper half, so that
/// parallel requests that failed together do not come back together.
pub fn backoff(base: Duration, retry: u32, jitter: f64) -> Duration {
    let full = base
        .checked_mul(2u32.saturating_pow(retry))
        .unwrap_or(MAX_BACKOFF)
        .min(MAX_BACKOFF);
    let jitter = if jitter.is_finite() {
        jitter.clamp(0.0, 1.0)
    } else {
        0.0
    };
    full.mul_f64(0.5 + 0.5 * jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified() {
        assert_eq!(classify(200), StatusClass::Success);
        for s in [408, 409, 429, 500, 502, 503, 504] {
            assert_eq!(classify(s), StatusClass::Transient, "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert_eq!(classify(s), StatusClass::Permanent, "{s}");
        }
    }

    #[test]
    fn retry_after_takes_seconds_or_an_http_date() {
        let now = DateTime::parse_from_rfc3339("2015-10-21T07:27:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(parse_retry_after("1", now), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_retry_after(" 120 ", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let base = Duration::from_millis(500);
        assert_eq!(backoff(base, 0, 0.0), Duration::from_millis(250));
        assert_eq!(backoff(base, 0, 1.0), Duration::from_millis(500));
        assert_eq!(backoff(base, 2, 1.0), Duration::from_secs(2));
        assert_eq!(backoff(base, 40, 1.0), MAX_BACKOFF);
        assert_eq!(backoff(base, 1, f64::NAN), Duration::from_millis(500));
        let spread = backoff(base, 3, 0.5);
        assert!(spread > Duration::from_secs(2) && spread < Duration::from_secs(4));
    }
}
