//! Document assertions: what `response`, `state` and `check` steps assert of a JSON document
//! (one [`Assertions`] struct for all three), and `state` itself (a fresh subscription's
//! snapshot).

use super::*;

impl Runner<'_> {
    pub(super) fn judge_document(
        &mut self,
        document: &Value,
        checks: &Assertions,
        level: &Option<Level>,
        on: &Option<String>,
    ) -> StepResult {
        match self.evaluate(document, checks)? {
            Ok(()) => Ok(()),
            Err((expected, actual)) => self.broken(level, on, expected, actual),
        }
    }

    /// The first assertion of `a` that `document` breaks, as (expected, actual). The order
    /// is the one each step kind judged its assertions in before they were one struct: the
    /// array orders and timestamps, the types and comparisons, then the members.
    pub(super) fn evaluate(
        &self,
        document: &Value,
        a: &Assertions,
    ) -> Result<Result<(), (String, String)>, Stop> {
        if let Some(miss) = unsorted(document, &a.sorted_desc) {
            return Ok(Err(miss));
        }
        for (array, members) in &a.timestamps {
            if let Some((at, value)) = crate::schema::first_non_timestamp(document, array, members)
            {
                let expected = format!("{at} an ISO 8601 timestamp with a UTC offset");
                return Ok(Err((expected, format!("{at} = {value}"))));
            }
        }
        if let Some(miss) = out_of_window(document, &a.instant_within_s) {
            return Ok(Err(miss));
        }
        if let Some(miss) = not_next_occurrence(document, &a.next_occurrence)? {
            return Ok(Err(miss));
        }
        if let Some(miss) = self.compare(document, a)? {
            return Ok(Err(miss));
        }
        if let Some(miss) = missing_text(document, &self.subst_matches(&a.text_contains)?) {
            return Ok(Err(miss));
        }
        self.members(document, a)
    }

    /// The types, bounds and orders `a` asserts of members of `document`: the first miss.
    fn compare(&self, document: &Value, a: &Assertions) -> Result<Option<(String, String)>, Stop> {
        for (pointer, kind) in &a.types {
            let member = document.pointer(pointer);
            if !member.is_some_and(|m| kind.holds(m)) {
                return Ok(Some((
                    format!("{pointer} is of type {}", kind.as_str()),
                    match member {
                        Some(m) => format!("{pointer} = {m}"),
                        None => format!("{pointer} is absent"),
                    },
                )));
            }
        }
        for (pointer, bound) in &self.subst_matches(&a.above)? {
            let member = document.pointer(pointer);
            let above = match (member.and_then(Value::as_f64), bound.as_f64()) {
                (Some(m), Some(b)) => m > b,
                _ => false,
            };
            if !above {
                return Ok(Some((
                    format!("{pointer} greater than {bound}"),
                    member.map_or_else(
                        || format!("{pointer} is absent"),
                        |m| format!("{pointer} = {m}"),
                    ),
                )));
            }
        }
        for (pointer, other) in &self.subst_matches(&a.differs)? {
            let member = document.pointer(pointer);
            if member.is_none_or(|m| crate::client::json_equal(m, other)) {
                return Ok(Some((
                    format!("{pointer} present and not {other}"),
                    member.map_or_else(
                        || format!("{pointer} is absent"),
                        |m| format!("{pointer} = {m}"),
                    ),
                )));
            }
        }
        for (pointer, wanted) in &a.in_order {
            let wanted: Vec<Value> = wanted
                .iter()
                .map(|element| self.subst(element))
                .collect::<Result<_, _>>()?;
            let items = document
                .pointer(pointer)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut next = wanted.iter().peekable();
            for item in items {
                if next.peek().is_some_and(|w| partial_match(item, w)) {
                    next.next();
                }
            }
            if let Some(missing) = next.next() {
                return Ok(Some((
                    format!(
                        "{pointer} holds {} in this order",
                        Value::Array(wanted.clone())
                    ),
                    format!(
                        "no {missing} after the ones before it in {}",
                        crate::checks::frame::clip(&Value::Array(items.to_vec()).to_string())
                    ),
                )));
            }
        }
        Ok(None)
    }

    // Kept whole (over the ~80-line aim): one block per member assertion, in the suite schema's order.
    fn members(
        &self,
        document: &Value,
        a: &Assertions,
    ) -> Result<Result<(), (String, String)>, Stop> {
        let Assertions {
            has,
            lacks,
            equals,
            one_of,
            len,
            bits_set,
            bits_clear,
            at_most,
            contains,
            excludes,
            ..
        } = a;
        for (pointer, bits) in bits_set {
            let actual = document.pointer(pointer).and_then(Value::as_u64);
            if actual.is_none_or(|a| a & bits != *bits) {
                return Ok(Err((
                    format!("{pointer} has bits {bits} set"),
                    format!(
                        "{pointer} = {}",
                        document.pointer(pointer).unwrap_or(&Value::Null)
                    ),
                )));
            }
        }
        for (pointer, bits) in bits_clear {
            let actual = document.pointer(pointer).and_then(Value::as_u64);
            if actual.is_none_or(|a| a & bits != 0) {
                return Ok(Err((
                    format!("{pointer} has bits {bits} clear"),
                    format!(
                        "{pointer} = {}",
                        document.pointer(pointer).unwrap_or(&Value::Null)
                    ),
                )));
            }
        }
        for (pointer, bound) in self.subst_matches(at_most)? {
            let actual = document.pointer(&pointer).and_then(Value::as_f64);
            if !actual.is_some_and(|a| bound.as_f64().is_some_and(|b| a <= b)) {
                return Ok(Err((
                    format!("{pointer} <= {bound}"),
                    format!(
                        "{pointer} = {}",
                        document.pointer(&pointer).unwrap_or(&Value::Null)
                    ),
                )));
            }
        }
        for (pointer, element) in self.subst_matches(contains)? {
            let found = document
                .pointer(&pointer)
                .and_then(Value::as_array)
                .is_some_and(|items| items.iter().any(|i| partial_match(i, &element)));
            if !found {
                return Ok(Err((
                    format!("{pointer} contains {element}"),
                    crate::checks::frame::clip(
                        &document
                            .pointer(&pointer)
                            .unwrap_or(&Value::Null)
                            .to_string(),
                    ),
                )));
            }
        }
        for (pointer, element) in self.subst_matches(excludes)? {
            let found = document
                .pointer(&pointer)
                .and_then(Value::as_array)
                .is_some_and(|items| items.iter().any(|i| partial_match(i, &element)));
            if found {
                return Ok(Err((
                    format!("{pointer} has no element like {element}"),
                    crate::checks::frame::clip(
                        &document
                            .pointer(&pointer)
                            .unwrap_or(&Value::Null)
                            .to_string(),
                    ),
                )));
            }
        }
        for pointer in has {
            let pointer = self.subst_str(pointer)?;
            if document.pointer(&pointer).is_none_or(Value::is_null) {
                return Ok(Err((
                    format!("{pointer} present"),
                    format!(
                        "absent in {}",
                        crate::checks::frame::clip(&document.to_string())
                    ),
                )));
            }
        }
        for pointer in lacks {
            let pointer = self.subst_str(pointer)?;
            if let Some(value) = document.pointer(&pointer).filter(|v| !v.is_null()) {
                return Ok(Err((
                    format!("{pointer} absent"),
                    format!(
                        "{pointer} = {}",
                        crate::checks::frame::clip(&value.to_string())
                    ),
                )));
            }
        }
        for (pointer, expected) in self.subst_matches(equals)? {
            let actual = document.pointer(&pointer).cloned().unwrap_or(Value::Null);
            if !json_eq(&actual, &expected) {
                return Ok(Err((
                    format!("{pointer} = {expected}"),
                    format!(
                        "{pointer} = {}",
                        crate::checks::frame::clip(&actual.to_string())
                    ),
                )));
            }
        }
        for (pointer, allowed) in one_of {
            let actual = document.pointer(pointer).cloned().unwrap_or(Value::Null);
            let allowed: Vec<Value> = allowed
                .iter()
                .map(|v| self.subst(v))
                .collect::<Result<_, _>>()?;
            if !allowed.iter().any(|v| json_eq(&actual, v)) {
                return Ok(Err((
                    format!("{pointer} one of {}", Value::Array(allowed.clone())),
                    format!("{pointer} = {actual}"),
                )));
            }
        }
        for (pointer, expected) in len {
            let actual = document
                .pointer(pointer)
                .and_then(Value::as_array)
                .map(Vec::len);
            if actual != Some(*expected) {
                return Ok(Err((
                    format!("{pointer} has {expected} items"),
                    actual.map_or("no array".into(), |n| format!("{n} items")),
                )));
            }
        }
        Ok(Ok(()))
    }

    pub(super) async fn subscribe_state(
        &mut self,
        on: &Option<String>,
        channel: &str,
    ) -> Result<Value, Stop> {
        let timeout = self.ctx.timeout;
        let conn = self.conn(on)?;
        let response = conn.subscribe_immediate(channel, timeout).await;
        match response {
            Ok(response) if response.pointer("/result/snapshot/state").is_some() => Ok(response),
            Ok(response) => Err(self.prerequisite(
                Rule::Sub001,
                on,
                format!("a snapshot of {channel}"),
                crate::checks::frame::clip(&response.to_string()),
            )),
            Err(error) => Err(self.transport_failure(
                error,
                Rule::Sub001,
                on,
                format!("a response to subscribe {channel}"),
            )),
        }
    }

    pub(super) async fn expect_state(&mut self, s: &Asserting<ExpectState>) -> StepResult {
        let channel = self.subst_str(&s.channel)?;
        let deadline = Instant::now() + Duration::from_millis(s.within_ms.unwrap_or(0));
        loop {
            let response = self.subscribe_state(&s.on, &channel).await?;
            let Some(state) = response.pointer("/result/snapshot/state").cloned() else {
                return self.broken(
                    &s.level,
                    &s.on,
                    format!("a snapshot of {channel}"),
                    crate::checks::frame::clip(&response.to_string()),
                );
            };
            if let Some(name) = &s.name {
                self.vars.set(name, state.clone());
            }
            match self.evaluate(&state, &s.assert)? {
                Ok(()) => return Ok(()),
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(25)).await
                }
                Err((expected, actual)) => return self.broken(&s.level, &s.on, expected, actual),
            }
        }
    }
}

/// Orders normalized values: instants (`@nanos`) and numbers numerically, else as text.
pub(super) fn sort_key(value: &Value) -> (i128, String) {
    match value {
        Value::String(text) => match text.strip_prefix('@').and_then(|n| n.parse::<i128>().ok()) {
            Some(nanos) => (nanos, String::new()),
            None => (i128::MIN, text.clone()),
        },
        Value::Number(n) => (n.as_f64().map_or(i128::MIN, |f| f as i128), String::new()),
        _ => (i128::MIN, String::new()),
    }
}

/// Whether `item` has every member of `partial` (recursively for objects); channel URIs match
/// in any spelling (`client::same_channel`).
pub(super) fn partial_match(item: &Value, partial: &Value) -> bool {
    match (item, partial) {
        (Value::Object(a), Value::Object(b)) => b
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|x| partial_match(x, v))),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| partial_match(x, y))
        }
        _ => crate::client::json_finds(item, partial),
    }
}

pub(super) fn describe(matching: &Matches) -> String {
    if matching.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = matching.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        format!(" with {}", parts.join(", "))
    }
}

/// Whether every pointer of `matching` holds its value in `document` (a search: channel URIs
/// match in any spelling).
pub(super) fn matches_all(document: &Value, matching: &Matches) -> bool {
    matching.iter().all(|(pointer, expected)| {
        crate::client::json_finds(document.pointer(pointer).unwrap_or(&Value::Null), expected)
    })
}

/// The first `pointer` whose array is not sorted by its items' `member`, newest first:
/// (expected, actual).
/// The first member of `windows` that is not a timestamp within its window of seconds from
/// now, as (expected, actual).
fn out_of_window(
    document: &Value,
    windows: &BTreeMap<String, [i64; 2]>,
) -> Option<(String, String)> {
    let now = jiff::Timestamp::now();
    for (pointer, [from, to]) in windows {
        let expected = format!("{pointer} a timestamp {from} s to {to} s from now");
        let (member, at) = match timestamp_at(document, pointer) {
            Ok(found) => found,
            Err(actual) => return Some((expected, actual)),
        };
        let seconds = now.duration_until(at).as_secs_f64();
        #[allow(clippy::cast_precision_loss)] // window bounds are small numbers of seconds
        if seconds < *from as f64 || seconds > *to as f64 {
            return Some((
                expected,
                format!("{pointer} = {member}, {seconds:.1} s from now"),
            ));
        }
    }
    None
}

/// The member at `pointer` as an instant, or what is there instead (absent, or not a
/// timestamp) as a finding's actual text.
fn timestamp_at<'d>(
    document: &'d Value,
    pointer: &str,
) -> Result<(&'d Value, jiff::Timestamp), String> {
    let member = document
        .pointer(pointer)
        .ok_or_else(|| format!("{pointer} is absent"))?;
    let at = member
        .as_str()
        .and_then(|text| text.parse::<jiff::Timestamp>().ok())
        .ok_or_else(|| format!("{pointer} = {member}, not a timestamp"))?;
    Ok((member, at))
}

/// The first member of `document` that is not its schedule's next occurrence
/// (`checks::schedule::judge_next_occurrence`). A schedule the harness cannot evaluate is
/// the suite's error.
fn not_next_occurrence(
    document: &Value,
    schedules: &BTreeMap<String, crate::suite::Schedule>,
) -> Result<Option<(String, String)>, Stop> {
    use crate::checks::schedule::{judge_next_occurrence, LOOKBACK_S};
    let now = jiff::Timestamp::now();
    for (pointer, schedule) in schedules {
        let crate::suite::Schedule {
            expression,
            time_zone,
        } = schedule;
        let expected = |at: &dyn std::fmt::Display| {
            format!(
                "{pointer} the first occurrence of `{expression}` in {time_zone} after the \
                 last {LOOKBACK_S} s: {at}"
            )
        };
        let shown = match timestamp_at(document, pointer) {
            Ok((_, shown)) => shown,
            Err(actual) => return Ok(Some((expected(&"a timestamp"), actual))),
        };
        match judge_next_occurrence(shown, expression, time_zone, now) {
            Ok(Ok(())) => {}
            Ok(Err(first)) => {
                return Ok(Some((expected(&first), format!("{pointer} = {shown}"))));
            }
            Err(e) => return Err(Stop::Harness(e.to_string())),
        }
    }
    Ok(None)
}

/// The first `text_contains` entry whose member does not hold its text.
fn missing_text(document: &Value, texts: &BTreeMap<String, Value>) -> Option<(String, String)> {
    for (pointer, wanted) in texts {
        let wanted = wanted
            .as_str()
            .map_or_else(|| wanted.to_string(), str::to_owned);
        let member = document.pointer(pointer);
        let text = member.map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned));
        if !text.as_deref().is_some_and(|t| t.contains(&wanted)) {
            let actual = match text {
                None => format!("{pointer} is absent"),
                Some(t) => format!("{pointer} = {}", crate::checks::frame::clip(&t)),
            };
            return Some((format!("{pointer} holds the text {wanted:?}"), actual));
        }
    }
    None
}

fn unsorted(document: &Value, sorted_desc: &BTreeMap<String, String>) -> Option<(String, String)> {
    for (pointer, member) in sorted_desc {
        let keys: Vec<Value> = document
            .pointer(pointer)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|item| {
                        crate::checks::compare::instant(
                            item.pointer(member).unwrap_or(&Value::Null),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !keys.windows(2).all(|w| sort_key(&w[0]) >= sort_key(&w[1])) {
            return Some((
                format!("{pointer} sorted by {member}, newest first"),
                format!("order {}", Value::Array(keys)),
            ));
        }
    }
    None
}
