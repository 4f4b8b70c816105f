//! `progress`: follows the `root/progress` frames of one token (ROOT-010). Progress never
//! goes down, the stream ends with a frame whose `progress` equals its `total`, and nothing
//! follows that frame. A host need not report progress at all: no frame is a note, not a
//! failure.

use std::time::Duration;

use serde_json::Value;

use super::{Runner, StepResult};
use crate::suite::ExpectProgress;
use crate::verdict::Level;

/// Default quiet time after the final frame.
const AFTER_FINAL_MS: u64 = 100;

/// Where a token's stream stands after one more frame.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Stream {
    /// More frames are due; the highest progress so far.
    Running(f64),
    /// The final frame (`progress == total`) arrived.
    Final,
    /// The frame breaks the rule: what was expected and what came.
    Broken(String, String),
}

/// Judges one frame's `progress`/`total` given the previous frame's progress.
pub(super) fn next_frame(previous: Option<f64>, progress: &Value, total: &Value) -> Stream {
    let Some(progress) = progress.as_f64() else {
        return Stream::Broken("a numeric progress".into(), format!("progress {progress}"));
    };
    if let Some(previous) = previous.filter(|p| progress < *p) {
        return Stream::Broken(
            "progress that never decreases".into(),
            format!("progress {progress} after {previous}"),
        );
    }
    if total.as_f64() == Some(progress) {
        Stream::Final
    } else {
        Stream::Running(progress)
    }
}

impl Runner<'_> {
    pub(super) async fn expect_progress(&mut self, s: &ExpectProgress) -> StepResult {
        let token = self.subst(&Value::String(s.token.clone()))?;
        let within = self.ctx.timeout;
        let is_ours = move |m: &Value| {
            m["method"] == "root/progress"
                && m.get("id").is_none()
                && m["params"]["progressToken"] == token
        };
        let mut previous: Option<f64> = None;
        loop {
            let Some(frame) = self.wait_message(&s.on, within, &is_ours).await? else {
                return match previous {
                    None => self.broken(
                        &Some(Level::May),
                        &s.on,
                        "root/progress frames for the token (optional: nothing to check without them)".into(),
                        format!("none within {} ms", within.as_millis()),
                    ),
                    Some(last) => self.broken(
                        &s.level,
                        &s.on,
                        "a final root/progress frame with progress == total".into(),
                        format!("last progress {last}, then nothing within {} ms", within.as_millis()),
                    ),
                };
            };
            match next_frame(
                previous,
                &frame["params"]["progress"],
                &frame["params"]["total"],
            ) {
                Stream::Running(progress) => previous = Some(progress),
                Stream::Final => break,
                Stream::Broken(expected, actual) => {
                    return self.broken(&s.level, &s.on, expected, actual)
                }
            }
        }
        let after = Duration::from_millis(s.after_ms.unwrap_or(AFTER_FINAL_MS));
        match self.wait_message(&s.on, after, &is_ours).await? {
            None => Ok(()),
            Some(late) => self.broken(
                &s.level,
                &s.on,
                "nothing for the token after its final frame".into(),
                crate::checks::frame::clip(&late["params"].to_string()),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rising_stream_ends_at_its_total() {
        assert_eq!(next_frame(None, &json!(0), &json!(1)), Stream::Running(0.0));
        assert_eq!(next_frame(Some(0.0), &json!(1), &json!(1)), Stream::Final);
        assert_eq!(next_frame(None, &json!(1), &json!(1)), Stream::Final);
        assert_eq!(
            next_frame(Some(2.0), &json!(2), &json!(5)),
            Stream::Running(2.0)
        );
        // Without a total there is no final frame yet.
        assert_eq!(
            next_frame(None, &json!(3), &Value::Null),
            Stream::Running(3.0)
        );
    }

    #[test]
    fn falling_or_missing_progress_breaks_the_stream() {
        assert!(matches!(
            next_frame(Some(2.0), &json!(1), &json!(5)),
            Stream::Broken(..)
        ));
        assert!(matches!(
            next_frame(None, &json!("half"), &json!(1)),
            Stream::Broken(..)
        ));
    }
}
