//! Schedule triggers (issue 29): the five-field AHP cron grammar, parsed into the values each
//! field matches, and the next occurrence of an expression in its IANA time zone. The host
//! owns trigger evaluation: it publishes that occurrence as the entry's `nextRunAt` and starts
//! a run when it arrives.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// How far ahead an occurrence is looked for: a valid expression such as `0 0 29 2 *` next
/// matches up to eight years on (no 29 February from 2096 to 2104).
const HORIZON_YEARS: i16 = 9;

/// How a host reads the grammar: the AHP grammar ([`Dialect::AHP`]), or a fault's reading of
/// it (names refused, steps the grammar forbids accepted, both day fields required).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// Month and weekday names (`JAN`, `MON`).
    pub names: bool,
    /// A step of 0 (taken as 1) and a step on a single value (ignored) accepted.
    pub loose_steps: bool,
    /// When both day fields are restricted, a day must match both (not either).
    pub both_days: bool,
    /// Sunday listed as both 0 and 7 cancels out (the two bits folded by exclusive or).
    pub sundays_cancel: bool,
}

impl Dialect {
    pub const AHP: Dialect = Dialect {
        names: true,
        loose_steps: false,
        both_days: false,
        sundays_cancel: false,
    };
}

/// A parsed cron expression: bit `v` of a field is set when the field matches the value `v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    /// Sunday is 0 (the grammar's 7 is folded onto it).
    weekdays: u8,
    /// Whether the day-of-month and day-of-week fields are restricted (not `*`): when both
    /// are, a day matches when either does (Unix cron).
    days_restricted: bool,
    weekdays_restricted: bool,
    both_days: bool,
}

impl Cron {
    /// Parses a five-field AHP cron expression as `dialect` reads it; `None` when it is
    /// outside the grammar.
    pub fn parse(expression: &str, dialect: Dialect) -> Option<Cron> {
        let fields: Vec<&str> = expression.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields.as_slice() else {
            return None;
        };
        let months: &[&str] = if dialect.names { &MONTHS } else { &[] };
        let weekdays: &[&str] = if dialect.names { &WEEKDAYS } else { &[] };
        let loose = dialect.loose_steps;
        let weekday_bits = field(weekday, (0, 7), weekdays, 0, loose)?;
        Some(Cron {
            minutes: field(minute, (0, 59), &[], 0, loose)?,
            hours: u32::try_from(field(hour, (0, 23), &[], 0, loose)?).ok()?,
            days: u32::try_from(field(day, (1, 31), &[], 0, loose)?).ok()?,
            months: u16::try_from(field(month, (1, 12), months, 1, loose)?).ok()?,
            weekdays: u8::try_from(fold_sundays(weekday_bits, dialect.sundays_cancel)).ok()?,
            days_restricted: *day != "*",
            weekdays_restricted: *weekday != "*",
            both_days: dialect.both_days,
        })
    }

    /// The first occurrence after `after` in `zone`, if there is one within the horizon.
    /// A wall-clock minute that a daylight-saving gap skips counts shifted forward by the
    /// gap's length (02:30 becomes 03:30); one that a fold repeats counts once, at its first
    /// instant.
    pub fn next_after(&self, zone: &TimeZone, after: Timestamp) -> Option<Timestamp> {
        let local = after.to_zoned(zone.clone()).datetime();
        let mut at = local
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let horizon = local.year().saturating_add(HORIZON_YEARS);
        while at.year() <= horizon {
            at = if !bit(u64::from(self.months), at.month()) {
                first_of_next_month(at.date())?
            } else if !self.day_matches(at.date()) {
                DateTime::from_parts(at.date().tomorrow().ok()?, Time::midnight())
            } else if !bit(u64::from(self.hours), at.hour()) {
                at.with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(1.hour())
                    .ok()?
            } else if !bit(self.minutes, at.minute()) {
                at.checked_add(1.minute()).ok()?
            } else {
                let instant = zone.to_ambiguous_zoned(at).compatible().ok()?.timestamp();
                if instant > after {
                    return Some(instant);
                }
                at.checked_add(1.minute()).ok()?
            };
        }
        None
    }

    fn day_matches(&self, date: Date) -> bool {
        let day = bit(u64::from(self.days), date.day());
        let weekday = bit(
            u64::from(self.weekdays),
            date.weekday().to_sunday_zero_offset(),
        );
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) if self.both_days => day && weekday,
            (true, true) => day || weekday,
            (true, false) => day,
            (false, true) => weekday,
            (false, false) => true,
        }
    }
}

/// The weekday field's bits with bit 7 (the grammar's second Sunday) folded onto bit 0.
fn fold_sundays(bits: u64, cancel: bool) -> u64 {
    let second = bits >> 7;
    let folded = if cancel { bits ^ second } else { bits | second };
    folded & 0x7f
}

fn bit(bits: u64, value: i8) -> bool {
    u32::try_from(value).is_ok_and(|v| v < 64 && bits & (1 << v) != 0)
}

fn first_of_next_month(date: Date) -> Option<DateTime> {
    let first = date.first_of_month().checked_add(1.month()).ok()?;
    Some(DateTime::from_parts(first, Time::midnight()))
}

/// The values one comma-separated field matches, as bits; `None` when an item is outside
/// the grammar. `bounds` are the field's lowest and highest values, `named` its names (the
/// first standing for `first`), `loose` a fault's reading of steps.
fn field(text: &str, bounds: (u32, u32), named: &[&str], first: u32, loose: bool) -> Option<u64> {
    text.split(',').try_fold(0u64, |bits, item| {
        Some(bits | item_bits(item, bounds, named, first, loose)?)
    })
}

/// One list item: `*`, a value or a range, the first and the last with an optional positive
/// step (a step on a single value is not part of the grammar).
fn item_bits(
    item: &str,
    (low, high): (u32, u32),
    named: &[&str],
    first: u32,
    loose: bool,
) -> Option<u64> {
    let (base, step) = match item.split_once('/') {
        Some((base, step)) => (base, Some(step)),
        None => (item, None),
    };
    let step = match step {
        Some(step) if !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit()) => {
            let step = step.parse::<u32>().ok().filter(|n| *n > 0 || loose)?;
            step.max(1)
        }
        Some(_) => return None,
        None => 1,
    };
    let value = |token: &str| -> Option<u32> {
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            return token
                .parse::<u32>()
                .ok()
                .filter(|v| (low..=high).contains(v));
        }
        let index = named.iter().position(|n| n.eq_ignore_ascii_case(token))?;
        u32::try_from(index).ok().map(|i| i + first)
    };
    let (from, to) = if base == "*" {
        (low, high)
    } else if let Some((from, to)) = base.split_once('-') {
        (value(from)?, value(to)?)
    } else if (step == 1 && !item.contains('/')) || loose {
        let single = value(base)?;
        (single, single)
    } else {
        return None;
    };
    if from > to {
        return None;
    }
    let step = usize::try_from(step).ok()?;
    Some(
        (from..=to)
            .step_by(step)
            .fold(0, |bits, v| bits | (1u64 << v)),
    )
}

#[cfg(test)]
mod tests {
    use super::{Cron, Dialect};
    use jiff::tz::TimeZone;
    use jiff::Timestamp;

    #[test]
    fn the_cron_grammar_takes_what_ahp_allows_and_nothing_else() {
        for good in [
            "0 * * * *",
            "30 9 * * MON-FRI",
            "0 0 1,15 * *",
            "*/15 * * * *",
            "1-30/2 0-23 1-31 jan-Dec 0-7",
            "59 23 31 12 7",
        ] {
            assert!(Cron::parse(good, Dialect::AHP).is_some(), "{good}");
        }
        for bad in [
            "",
            "* * * *",
            "* * * * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 8",
            "@daily",
            "*/0 * * * *",
            "5/2 * * * *",
            "* * ? * *",
            "5-1 * * * *",
            "1,,2 * * * *",
            "* * L * *",
            "*/x * * * *",
        ] {
            assert!(Cron::parse(bad, Dialect::AHP).is_none(), "{bad}");
        }
        let names_refused = Dialect {
            names: false,
            ..Dialect::AHP
        };
        assert!(Cron::parse("30 9 * * MON-FRI", names_refused).is_none());
    }

    fn next(expression: &str, zone: &str, after: &str) -> String {
        let cron = Cron::parse(expression, Dialect::AHP).expect("a valid expression");
        let zone = TimeZone::get(zone).expect("a known zone");
        let after: Timestamp = after.parse().expect("a timestamp");
        cron.next_after(&zone, after)
            .map_or_else(|| "none".into(), |t| t.to_string())
    }

    #[test]
    fn the_next_occurrence_follows_the_fields_and_the_time_zone() {
        // (expression, time zone, after, the next occurrence)
        #[rustfmt::skip]
        let cases = [
            // Every minute: the next whole minute, never the instant itself.
            ("* * * * *", "UTC", "2026-11-27T10:00:00Z", "2026-11-27T10:01:00Z"),
            ("* * * * *", "UTC", "2026-11-27T10:00:59.5Z", "2026-11-27T10:01:00Z"),
            // Steps, ranges and names.
            ("*/15 * * * *", "UTC", "2026-11-27T10:16:00Z", "2026-11-27T10:30:00Z"),
            ("30 9 * * MON-FRI", "UTC", "2026-11-27T10:00:00Z", "2026-11-30T09:30:00Z"),
            ("0 0 1 jan *", "UTC", "2026-11-27T10:00:00Z", "2027-01-01T00:00:00Z"),
            // 7 is Sunday too.
            ("0 12 * * 7", "UTC", "2026-11-27T10:00:00Z", "2026-11-29T12:00:00Z"),
            // Day of month or day of week when both are restricted.
            ("0 0 13 * FRI", "UTC", "2026-11-27T10:00:00Z", "2026-12-04T00:00:00Z"),
            // The time zone: 09:00 in Berlin is 08:00 UTC in winter.
            ("0 9 * * *", "Europe/Berlin", "2026-11-27T10:00:00Z", "2026-11-28T08:00:00Z"),
            // A minute the spring-forward gap skips runs shifted by the gap: 03:30 summer time.
            ("30 2 29 3 *", "Europe/Berlin", "2026-03-01T00:00:00Z", "2026-03-29T01:30:00Z"),
            // A minute the autumn fold repeats runs once, at its first instant (summer time).
            ("30 2 25 10 *", "Europe/Berlin", "2026-10-01T00:00:00Z", "2026-10-25T00:30:00Z"),
            ("30 2 25 10 *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2027-10-25T00:30:00Z"),
            // 29 February, years away.
            ("0 0 29 2 *", "UTC", "2026-11-27T10:00:00Z", "2028-02-29T00:00:00Z"),
            // 31 April never comes.
            ("0 0 31 4 *", "UTC", "2026-11-27T10:00:00Z", "none"),
        ];
        for (expression, zone, after, next_one) in cases {
            assert_eq!(
                next(expression, zone, after),
                next_one,
                "{expression} in {zone} after {after}"
            );
        }
    }
}
