//! A recording client's exchanges (`fuzz --protocol aap --record`): each one, when it
//! ends, as the same [`Exchange`] an AAP proxy records, so one capture format and one
//! offline check (`ahpspec check`) serve both. The client keeps the whole body it read, so
//! a recorded copy is never cut; redaction happens where the capture is written.

use std::sync::Arc;

use super::exchange::{BodyCopy, Ending, Exchange};
use super::{Body, HttpError, Request, Response};
use crate::aap::sse::StreamEnd;

/// Where a recording client hands each exchange when it ends (a capture's writer);
/// cheap to clone and share between the clients of a campaign.
#[derive(Clone)]
pub struct ExchangeSink(Arc<dyn Fn(Exchange) + Send + Sync>);

impl ExchangeSink {
    pub fn new(take: impl Fn(Exchange) + Send + Sync + 'static) -> ExchangeSink {
        ExchangeSink(Arc::new(take))
    }

    /// Hands over one finished exchange.
    pub fn take(&self, exchange: Exchange) {
        (self.0)(exchange)
    }
}

impl std::fmt::Debug for ExchangeSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExchangeSink")
    }
}

/// The exchange of `request`: its answer, or (no response) why not. `raw` holds the
/// response body's bytes as they came.
pub(super) fn exchange(
    request: &Request,
    result: &Result<Response, HttpError>,
    raw: &[u8],
) -> Exchange {
    let mut exchange = sent(request);
    match result {
        Ok(response) => {
            exchange.status = Some(response.status);
            exchange.content_type = response.content_type.clone();
            exchange.response = (!raw.is_empty()).then(|| BodyCopy::of(raw, raw.len()));
            exchange.ending = Some(match &response.body {
                Body::Events(read) => match &read.end {
                    StreamEnd::Closed => Ending::Ended,
                    StreamEnd::Broken(why) => Ending::Broken(why.clone()),
                    // The client stopped waiting: what came is not the whole body.
                    StreamEnd::TimedOut(_) => Ending::Open,
                },
                _ => Ending::Ended,
            });
        }
        Err(error) => exchange.error = Some(error.to_string()),
    }
    exchange
}

/// The exchange of `request` read by a bad reader: the response's head only (the body was
/// read badly on purpose, so it is still open as far as the record goes), or why no
/// response came.
pub(super) fn read_badly(request: &Request, result: &Result<Response, HttpError>) -> Exchange {
    let mut exchange = sent(request);
    match result {
        Ok(response) => {
            exchange.status = Some(response.status);
            exchange.content_type = response.content_type.clone();
            exchange.ending = Some(Ending::Open);
        }
        Err(error) => exchange.error = Some(error.to_string()),
    }
    exchange
}

/// The request half of an exchange.
fn sent(request: &Request) -> Exchange {
    Exchange {
        method: request.method.clone(),
        path: request.path.clone(),
        request_type: request.body.as_ref().map(|_| {
            request
                .content_type
                .as_deref()
                .unwrap_or("application/json")
                .to_owned()
        }),
        request: request
            .body
            .as_deref()
            .map(|body| BodyCopy::of(body, body.len())),
        status: None,
        content_type: None,
        response: None,
        ending: None,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aap::sse::SseRead;
    use std::time::Duration;

    fn request() -> Request {
        Request {
            method: "POST".into(),
            path: "/sessions/s1/turns".into(),
            body: Some(b"{\"stream\":\"delta\"}".to_vec()),
            content_type: None,
            auth: Default::default(),
        }
    }

    #[test]
    fn a_request_with_no_response_is_recorded_with_why() {
        let recorded = exchange(
            &request(),
            &Err(HttpError::Timeout(Duration::from_secs(1))),
            b"",
        );
        assert_eq!(recorded.status, None);
        assert!(recorded
            .error
            .as_deref()
            .is_some_and(|e| e.contains("timed out")));
        assert_eq!(recorded.request_type.as_deref(), Some("application/json"));
        assert!(recorded.response().is_none());
    }

    #[test]
    fn a_stream_the_client_gave_up_on_is_recorded_open() {
        let response = Response {
            status: 200,
            content_type: Some("text/event-stream".into()),
            body: Body::Events(SseRead {
                events: Vec::new(),
                end: StreamEnd::TimedOut(Duration::from_secs(1)),
                unterminated: false,
            }),
        };
        let raw = b"data: {\"event\":\"turn_start\"}\n\n";
        let recorded = exchange(&request(), &Ok(response), raw);
        assert_eq!(recorded.ending, Some(Ending::Open));
        assert_eq!(
            recorded.response.as_ref().map(|c| c.length),
            Some(raw.len())
        );
        let read_back = recorded.response().expect("a response");
        assert_eq!(read_back.events().expect("events").events.len(), 1);
    }
}
