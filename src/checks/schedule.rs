//! A schedule trigger's next occurrence (AUTOMATION-011): the earliest match of a five-field
//! cron expression in its IANA time zone after a given instant, computed by the croner crate
//! so that the harness judges a host's `nextRunAt` by an evaluator that is not the reference
//! host's own. Unix semantics: when both day fields are restricted, either one matching is
//! enough (croner's default, and the AHP grammar's words).

use croner::parser::CronParser;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// How far back the host may have computed the occurrence it shows: the check runs after
/// the automation's `automation/set` arrived, and the host computed `nextRunAt` when it
/// handled the creation (plus clock skew between the two machines).
pub const LOOKBACK_S: i64 = 10;

/// Why a schedule could not be evaluated: a case's own expression or zone is bad, which is
/// the suite's fault, not the host's.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("`{0}` is not a cron expression the harness can evaluate: {1}")]
    Expression(String, String),
    #[error("`{0}` is not an IANA time zone the harness knows")]
    Zone(String),
    #[error("`{0}` has no occurrence after {1}")]
    NoOccurrence(String, Timestamp),
}

/// The first occurrence of `expression` in `zone` strictly after `after`.
pub fn next_occurrence(
    expression: &str,
    zone: &str,
    after: Timestamp,
) -> Result<Timestamp, ScheduleError> {
    let cron = CronParser::new()
        .parse(expression)
        .map_err(|e| ScheduleError::Expression(expression.to_owned(), e.to_string()))?;
    let zone_info = TimeZone::get(zone).map_err(|_| ScheduleError::Zone(zone.to_owned()))?;
    cron.find_next_occurrence(&after.to_zoned(zone_info), false)
        .map(|at| at.timestamp())
        .map_err(|_| ScheduleError::NoOccurrence(expression.to_owned(), after))
}

/// Whether `shown` is the next occurrence a host that computed it at some instant of the
/// last [`LOOKBACK_S`] seconds before `now` could show: the first match after the start of
/// that window, or, when that match itself fell inside the window, the one after it. `Err`
/// holds the expected occurrence.
pub fn judge_next_occurrence(
    shown: Timestamp,
    expression: &str,
    zone: &str,
    now: Timestamp,
) -> Result<Result<(), Timestamp>, ScheduleError> {
    let from = now
        .checked_sub(jiff::SignedDuration::from_secs(LOOKBACK_S))
        .unwrap_or(now);
    let first = next_occurrence(expression, zone, from)?;
    if shown == first {
        return Ok(Ok(()));
    }
    if first <= now && shown == next_occurrence(expression, zone, first)? {
        return Ok(Ok(()));
    }
    Ok(Err(first))
}

#[cfg(test)]
mod tests {
    use super::{judge_next_occurrence, next_occurrence};
    use jiff::Timestamp;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("a test instant")
    }

    #[test]
    fn the_next_occurrence_follows_names_sundays_as_seven_and_either_day_field() {
        // Saturday 28 November 2026, 23:50 UTC.
        let now = at("2026-11-28T23:50:00Z");
        let next = |e: &str, z: &str| next_occurrence(e, z, now).expect("evaluates").to_string();
        assert_eq!(next("30 9 1 jan,Jul *", "UTC"), "2027-01-01T09:30:00Z");
        // 7 is Sunday; New York is five hours behind UTC in November.
        assert_eq!(
            next("0 10 * * 7", "America/New_York"),
            "2026-11-29T15:00:00Z"
        );
        // The 13th or a Friday: Friday 4 December comes before Sunday 13 December.
        assert_eq!(next("0 12 13 * FRI", "UTC"), "2026-12-04T12:00:00Z");
        assert_eq!(next("5-59/20 * * * *", "UTC"), "2026-11-29T00:05:00Z");
        assert_eq!(
            next("15 8 * * SUN-SAT/7", "Europe/Berlin"),
            "2026-11-29T07:15:00Z"
        );
    }

    #[test]
    fn an_occurrence_computed_a_moment_ago_is_accepted_and_a_wrong_one_is_not() {
        let now = at("2026-11-29T00:05:03Z");
        let judge = |shown: &str| judge_next_occurrence(at(shown), "5-59/20 * * * *", "UTC", now);
        // Computed before 00:05 (the occurrence then still ahead) or after it.
        assert!(judge("2026-11-29T00:05:00Z").expect("evaluates").is_ok());
        assert!(judge("2026-11-29T00:25:00Z").expect("evaluates").is_ok());
        let wrong = judge("2026-11-29T00:45:00Z").expect("evaluates");
        assert_eq!(wrong, Err(at("2026-11-29T00:05:00Z")));
        assert!(judge_next_occurrence(now, "61 * * * *", "UTC", now).is_err());
        assert!(judge_next_occurrence(now, "* * * * *", "Mars/Olympus_Mons", now).is_err());
    }
}
