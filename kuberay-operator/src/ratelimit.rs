//! Client-side request rate limiting for `--qps` / `--burst` (client-go's token bucket): a tower
//! layer under kube's client. kube drives its service through a `Buffer` worker that calls
//! `poll_ready` before each request, so waiting for a token in `poll_ready` delays requests in order.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// A token bucket: `qps` tokens per second, at most `burst` stored.
#[derive(Clone, Copy, Debug)]
pub struct RateLimitLayer {
    qps: f64,
    burst: f64,
}

impl RateLimitLayer {
    /// `None` when requests are not limited (client-go: negative QPS). QPS 0 means client-go's 5,
    /// burst 0 its 10.
    pub fn new(qps: f64, burst: i64) -> Option<Self> {
        if qps < 0.0 {
            return None;
        }
        let qps = if qps == 0.0 { 5.0 } else { qps };
        let burst = if burst <= 0 { 10.0 } else { burst as f64 };
        Some(Self { qps, burst })
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            qps: self.qps,
            burst: self.burst,
            tokens: self.burst,
            refilled: Instant::now(),
            sleep: None,
        }
    }
}

/// The service of [`RateLimitLayer`].
pub struct RateLimit<S> {
    inner: S,
    qps: f64,
    burst: f64,
    tokens: f64,
    refilled: Instant,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<S, R> Service<R> for RateLimit<S>
where
    S: Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        loop {
            if let Some(sleep) = self.sleep.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.sleep = None;
            }
            let now = Instant::now();
            let elapsed = now.duration_since(self.refilled).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
            self.refilled = now;
            if self.tokens >= 1.0 {
                return self.inner.poll_ready(cx);
            }
            let wait = Duration::from_secs_f64((1.0 - self.tokens) / self.qps);
            self.sleep = Some(Box::pin(tokio::time::sleep(wait)));
        }
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.tokens -= 1.0;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    #[tokio::test]
    async fn burst_then_qps() {
        let layer = RateLimitLayer::new(50.0, 3).unwrap();
        let mut svc = layer.layer(tower::service_fn(|()| async { Ok::<_, Infallible>(()) }));
        let start = Instant::now();
        for _ in 0..5 {
            std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
            svc.call(()).await.unwrap();
        }
        // 3 immediately, then 2 more at 50/s.
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(38) && took < Duration::from_millis(500),
            "{took:?}"
        );
        assert!(RateLimitLayer::new(-1.0, 0).is_none());
    }
}
