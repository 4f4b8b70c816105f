//! Document checks: the assertions `response` and `state` steps make on a JSON document
//! (present, absent, equal, one of, length, bits, bounds, contains, sorted), and `state`
//! itself (a fresh subscription's snapshot).

use super::*;

impl Runner<'_> {
    pub(super) fn judge_document(
        &mut self,
        document: &Value,
        checks: &DocChecks<'_>,
        level: &Option<Level>,
        on: &Option<String>,
    ) -> StepResult {
        match self.evaluate(document, checks)? {
            Ok(()) => Ok(()),
            Err((expected, actual)) => self.broken(level, on, expected, actual),
        }
    }

    // Kept whole (over the ~80-line aim): one block per document-check field, in the suite schema's order.
    pub(super) fn evaluate(
        &self,
        document: &Value,
        checks: &DocChecks<'_>,
    ) -> Result<Result<(), (String, String)>, Stop> {
        let DocChecks {
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
        } = *checks;
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

    pub(super) async fn expect_state(&mut self, s: &ExpectState) -> StepResult {
        let channel = self.subst_str(&s.channel)?;
        let no_bounds = Matches::new();
        let checks = DocChecks {
            has: &s.has,
            lacks: &s.lacks,
            equals: &s.equals,
            one_of: &s.one_of,
            len: &s.len,
            bits_set: &s.bits_set,
            bits_clear: &s.bits_clear,
            at_most: &no_bounds,
            contains: &s.contains,
            excludes: &s.excludes,
        };
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
            match self.evaluate(&state, &checks)? {
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

/// The document checks shared by `response` and `state` steps.
#[derive(Clone, Copy)]
pub(super) struct DocChecks<'a> {
    pub(super) has: &'a [String],
    pub(super) lacks: &'a [String],
    pub(super) equals: &'a Matches,
    pub(super) one_of: &'a BTreeMap<String, Vec<Value>>,
    pub(super) len: &'a BTreeMap<String, usize>,
    pub(super) bits_set: &'a BTreeMap<String, u64>,
    pub(super) bits_clear: &'a BTreeMap<String, u64>,
    pub(super) at_most: &'a Matches,
    pub(super) contains: &'a Matches,
    pub(super) excludes: &'a Matches,
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
