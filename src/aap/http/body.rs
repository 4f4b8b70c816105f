//! A request body handed to hyper in slices, saying when the last one was taken: a
//! connection that fails before that failed while the body was being sent (the server
//! closed early, maybe after an answer the client could not read), not after.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

/// Bytes handed over at a time.
const SLICE: usize = 64 * 1024;

/// The body; `taken` turns true once hyper has taken its last slice.
pub struct SentBody {
    data: Bytes,
    taken: Arc<AtomicBool>,
}

/// Whether a [`SentBody`]'s last slice was taken.
#[derive(Debug, Clone)]
pub struct Taken(Arc<AtomicBool>);

impl Taken {
    pub fn all(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl SentBody {
    /// The body of `data`, and what says it was all taken.
    pub fn new(data: Vec<u8>) -> (SentBody, Taken) {
        let taken = Arc::new(AtomicBool::new(data.is_empty()));
        let body = SentBody {
            data: Bytes::from(data),
            taken: Arc::clone(&taken),
        };
        (body, Taken(taken))
    }
}

impl Body for SentBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.data.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.data.len().min(SLICE);
        let slice = self.data.split_to(n);
        if self.data.is_empty() {
            self.taken.store(true, Ordering::Release);
        }
        Poll::Ready(Some(Ok(Frame::data(slice))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.len() as u64)
    }
}
