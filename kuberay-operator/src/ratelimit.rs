//! Client-side request limits: the rate of `--qps` / `--burst` (client-go's token bucket), a tower
//! layer under kube's client, and the number of requests in flight of `--max-requests-in-flight`. kube
//! drives its service through a `Buffer` worker that calls `poll_ready` before each request, so waiting
//! for a token in `poll_ready` delays requests in order.
//!
//! The limited client sends through an unlimited one ([`ThroughClient`]), so that both share one
//! connection pool: KubeRay limits its API client but not the HTTP client it reaches dashboards with
//! through the API server's proxy.
//!
//! The in-flight limit bounds the pool: hyper opens one more connection for each request sent while
//! every open one is busy, and keeps each (with its TLS and HTTP buffers, tens of KiB) for 90 s. Sixteen
//! concurrent reconciles creating pods opened about 115 of them (docs/benchmarks.md).

use futures::future::BoxFuture;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// A tower service sending each request with a [`kube::Client`] (the innermost service of a client built
/// over another).
#[derive(Clone)]
pub struct ThroughClient {
    client: kube::Client,
    in_flight: Option<Arc<Semaphore>>,
}

impl ThroughClient {
    /// Sends through `client`, at most `max_in_flight` requests at a time (0: no limit). A request holds
    /// its place until its response's headers arrive, so a watch holds one only while it is being opened.
    /// Waiting requests go in the order they came (tokio's semaphore is fair).
    pub fn with_max_in_flight(client: kube::Client, max_in_flight: usize) -> Self {
        Self {
            client,
            in_flight: (max_in_flight > 0).then(|| Arc::new(Semaphore::new(max_in_flight))),
        }
    }
}

impl Service<http::Request<kube::client::Body>> for ThroughClient {
    type Response = http::Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner client queues requests itself.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let client = self.client.clone();
        let in_flight = self.in_flight.clone();
        Box::pin(async move {
            // The semaphore is never closed, so acquiring cannot fail; were it to, the request goes unlimited
            // rather than failing.
            let _place = match in_flight {
                Some(in_flight) => in_flight.acquire_owned().await.ok(),
                None => None,
            };
            client.send(request).await
        })
    }
}

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

    /// A client limited over an unlimited one (as `run` builds them): the limited one waits for tokens,
    /// the unlimited one it sends through does not, and both reach the same server. The clock is paused, so
    /// only the bucket's waits count.
    #[tokio::test(start_paused = true)]
    async fn a_limited_client_over_an_unlimited_one_limits_only_its_own_requests() {
        let counted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = counted.clone();
        let server = tower::service_fn(move |_request: http::Request<kube::client::Body>| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok::<_, Infallible>(http::Response::new(kube::client::Body::from(b"{}".to_vec()))) }
        });
        let unlimited = kube::Client::new(server, "default");
        let limit = RateLimitLayer::new(20.0, 2).unwrap();
        let limited = kube::Client::new(
            limit.layer(ThroughClient::with_max_in_flight(unlimited.clone(), 0)),
            "default",
        );
        let get = || {
            http::Request::get("/version")
                .body(kube::client::Body::empty())
                .unwrap()
        };

        let start = Instant::now();
        for _ in 0..4 {
            unlimited.send(get()).await.unwrap();
        }
        let free = start.elapsed();
        let start = Instant::now();
        for _ in 0..4 {
            limited.send(get()).await.unwrap();
        }
        let limited_took = start.elapsed();
        // 2 at once, then 2 more at 20/s: 100 ms; the unlimited four wait for no token.
        assert!(
            limited_took >= Duration::from_millis(100) && limited_took < Duration::from_millis(150),
            "{limited_took:?}"
        );
        assert_eq!(free, Duration::ZERO);
        assert_eq!(counted.load(std::sync::atomic::Ordering::SeqCst), 8);
    }

    /// With `--max-requests-in-flight 2`, six concurrent requests reach the server two at a time, and all
    /// six are served.
    #[tokio::test(start_paused = true)]
    async fn requests_in_flight_are_limited() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let in_flight = std::sync::Arc::new(AtomicUsize::new(0));
        let most = std::sync::Arc::new(AtomicUsize::new(0));
        let served = std::sync::Arc::new(AtomicUsize::new(0));
        let (now, peak, count) = (in_flight.clone(), most.clone(), served.clone());
        let server = tower::service_fn(move |_request: http::Request<kube::client::Body>| {
            let (now, peak, count) = (now.clone(), peak.clone(), count.clone());
            async move {
                let current = now.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(current, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                count.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Infallible>(http::Response::new(kube::client::Body::from(b"{}".to_vec())))
            }
        });
        let unlimited = kube::Client::new(server, "default");
        let limited = kube::Client::new(ThroughClient::with_max_in_flight(unlimited, 2), "default");
        let requests = (0..6).map(|_| {
            let client = limited.clone();
            async move {
                let request = http::Request::get("/version")
                    .body(kube::client::Body::empty())
                    .unwrap();
                client.send(request).await.unwrap();
            }
        });
        let start = Instant::now();
        futures::future::join_all(requests).await;
        assert_eq!(served.load(Ordering::SeqCst), 6);
        assert_eq!(most.load(Ordering::SeqCst), 2);
        // Three rounds of two.
        assert_eq!(start.elapsed(), Duration::from_millis(30));
    }
}
