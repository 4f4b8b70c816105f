//! A turn whose streamed answer the client reads badly (`reader = "drop" | "slow" |
//! "stall"` on a turn step): only the status is judged (always-on: no 5xx); the stream was
//! cut off by the client, so nothing of it is. The steps after it judge whether the server
//! is still well.

use std::collections::HashSet;

use serde_json::Value;

use super::{Run, Stop};
use crate::aap::checks::Seen;
use crate::aap::http::{BadReader, Request};
use crate::aap::suite::Step;

impl Run<'_> {
    /// Sends the turn `request`, reads its answer as `reader` does, and stores the
    /// response (status and content type) as `name`.
    pub(super) async fn turn_read_badly(
        &mut self,
        request: Request,
        body: &Value,
        reader: BadReader,
        name: Option<&str>,
        at: &str,
    ) -> Result<(), Stop> {
        let wire = self.on_wire(&request);
        // What the turn produced was not read: the session's history is no longer known.
        if let Some(model) =
            super::session_of(&request.path).and_then(|id| self.sessions.get_mut(id))
        {
            model.lose_track();
        }
        match self.ctx.client.send_reading_badly(&wire, reader).await {
            Ok(response) => {
                self.ctx.observer.observe(&Seen {
                    method: &request.method,
                    path: &request.path,
                    request: Some(body),
                    response: &response,
                    client_tools: &HashSet::new(),
                });
                if let Some(name) = name {
                    self.stored.insert(name.to_owned(), response);
                }
                Ok(())
            }
            Err(error) => Err(self.unanswered(&wire, &error, name, at)),
        }
    }

    /// The rule the first expectation of the response stored as `name` relies on: a
    /// request that got no answer at all is charged there (a hang on a request the case
    /// expects refused is that expectation's failure), not to the case as a whole.
    pub(super) fn relied_on(&self, name: &str) -> Option<String> {
        self.case
            .steps
            .iter()
            .find_map(|located| match &located.step {
                Step::Expect(expect) if expect.of == name => expect.relies_on.clone(),
                _ => None,
            })
    }
}
