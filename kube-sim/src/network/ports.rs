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
    first_not_given(&GIVEN, || Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port()))
}

/// The first port `bind` returns that is not in `given`, recorded there.
fn first_not_given(
    given: &Mutex<BTreeSet<u16>>,
    mut bind: impl FnMut() -> std::io::Result<u16>,
) -> std::io::Result<u16> {
    loop {
        let port = bind()?;
        if given.lock().unwrap_or_else(PoisonError::into_inner).insert(port) {
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

    #[test]
    fn a_port_the_kernel_hands_back_again_is_skipped() {
        let given = Mutex::new(BTreeSet::new());
        // The kernel's binds: the released 40000 comes back on the next bind, as it can.
        let mut binds = [40_000, 40_000, 40_000, 40_001].into_iter();
        let mut bind = || Ok(binds.next().unwrap());
        assert_eq!(first_not_given(&given, &mut bind).unwrap(), 40_000);
        assert_eq!(first_not_given(&given, &mut bind).unwrap(), 40_001);
        assert!(binds.next().is_none(), "both repeats were skipped");
    }

    #[test]
    fn a_failed_bind_is_returned() {
        let given = Mutex::new(BTreeSet::new());
        let error = first_not_given(&given, || Err(std::io::Error::other("no ports"))).unwrap_err();
        assert_eq!(error.to_string(), "no ports");
    }
}
