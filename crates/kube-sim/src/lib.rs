//! A simulated Kubernetes control plane over HTTP — API server, hollow scheduler, kubelet, Job
//! controller, garbage collector, fault injection — and a hollow Ray head, for tests, demos and benchmarks.
