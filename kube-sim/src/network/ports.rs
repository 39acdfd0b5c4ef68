//! Loopback ports for the programs that tests and benches start beside a simulator (operators, real Ray).

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::{Mutex, PoisonError};

/// A TCP port on 127.0.0.1 that is free now and that this function has not returned before in this process.
///
/// A free port is found by binding port 0 and releasing it, for the program started next to bind. A released
/// port can come back from the very next bind, and two programs (or two listeners of one program, such as an
/// operator's metrics and probe ports, or Ray's agent ports) given the same one fail to start; so no port is
/// handed out twice.
pub fn unused_loopback_port() -> std::io::Result<u16> {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        if GIVEN.lock().unwrap_or_else(PoisonError::into_inner).insert(port) {
            return Ok(port);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_port_is_handed_out_twice() {
        let ports: Vec<u16> = (0..200).map(|_| unused_loopback_port().unwrap()).collect();
        let distinct: BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
        assert!(ports.iter().all(|&p| p != 0));
    }
}
