//! The body between the two sides: every frame goes on as it arrives (hyper polls the
//! upstream body only as fast as the client takes it, so nothing is buffered whole), and
//! a copy of the first `max_body` bytes is kept for the checks. When the response body
//! ends — finished, broken off, or dropped with the proxy — the exchange is complete and
//! goes to the judge.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::sync::mpsc;

use crate::aap::http::exchange::{BodyCopy, Ending, Exchange};

/// One exchange in progress: what has been copied of both bodies.
pub(super) struct Pending {
    pub exchange: Exchange,
    pub request: Vec<u8>,
    pub request_length: usize,
    pub response: Vec<u8>,
    pub response_length: usize,
    pub max_body: usize,
    /// Where the finished exchange goes (once).
    pub judge: Option<mpsc::UnboundedSender<(usize, Exchange)>>,
    pub number: usize,
}

impl Pending {
    fn copy(&mut self, side: Side, data: &Bytes) {
        let max = self.max_body;
        let (kept, length) = match side {
            Side::Request => (&mut self.request, &mut self.request_length),
            Side::Response => (&mut self.response, &mut self.response_length),
        };
        *length += data.len();
        let room = max.saturating_sub(kept.len());
        kept.extend_from_slice(&data[..room.min(data.len())]);
    }

    /// Completes the exchange and hands it to the judge (the first call only).
    pub fn finish(&mut self, ending: Option<Ending>) {
        let Some(judge) = self.judge.take() else {
            return;
        };
        let mut exchange = self.exchange.clone();
        if self.request_length > 0 {
            exchange.request = Some(BodyCopy::of(&self.request, self.request_length));
        }
        if exchange.status.is_some() {
            exchange.response = Some(BodyCopy::of(&self.response, self.response_length));
            exchange.ending = ending;
        }
        let _ = judge.send((self.number, exchange));
    }
}

impl Drop for Pending {
    /// An exchange nobody finished (the proxy stopped before the upstream answered, or
    /// while the response was open) is judged as such.
    fn drop(&mut self) {
        if self.exchange.status.is_none() && self.exchange.error.is_none() {
            self.exchange.error = Some("the proxy stopped before the upstream answered".into());
        }
        self.finish(Some(Ending::Open));
    }
}

pub(super) type Shared = Arc<Mutex<Pending>>;

pub(super) fn lock(pending: &Shared) -> std::sync::MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Request,
    Response,
}

/// A body passed through, copied on the way.
pub(super) struct Tee {
    inner: Incoming,
    side: Side,
    pending: Shared,
    ended: bool,
    /// The upstream's error, passed on at the next poll: hyper aborts the client connection
    /// on a body error, and a head and data it has buffered but not yet written are lost
    /// with it (the client saw no response at all, 1 run in 6). Returning `Pending` once
    /// lets hyper flush them first.
    deferred: Option<hyper::Error>,
}

impl Tee {
    pub fn new(inner: Incoming, side: Side, pending: Shared) -> Tee {
        Tee {
            inner,
            side,
            pending,
            ended: false,
            deferred: None,
        }
    }

    fn end(&mut self, ending: Ending) {
        if self.ended {
            return;
        }
        self.ended = true;
        if self.side == Side::Response {
            lock(&self.pending).finish(Some(ending));
        }
    }
}

impl Body for Tee {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        if let Some(error) = this.deferred.take() {
            this.end(Ending::Broken(error.to_string()));
            return Poll::Ready(Some(Err(error)));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    lock(&this.pending).copy(this.side, data);
                }
                if this.inner.is_end_stream() {
                    this.end(Ending::Ended);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => {
                this.deferred = Some(error);
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Poll::Ready(None) => {
                this.end(Ending::Ended);
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        // Dropped before its end: the client went away or the proxy stopped (or, with an
        // error not yet passed on, the upstream broke the body off).
        let ending = match (self.deferred.take(), self.inner.is_end_stream()) {
            (Some(error), _) => Ending::Broken(error.to_string()),
            (None, true) => Ending::Ended,
            (None, false) => Ending::Open,
        };
        self.end(ending);
    }
}
