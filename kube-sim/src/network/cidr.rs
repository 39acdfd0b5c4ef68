//! IPv4 CIDR blocks: parsing, carving an instance's block out of a pool, and addresses inside a block.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// An IPv4 network such as `10.96.0.0/12` (the address is masked to the prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    base: u32,
    prefix: u8,
}

/// A CIDR that could not be parsed or carved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid IPv4 CIDR {text:?}: {why}")]
pub struct CidrError {
    /// The text or block concerned.
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl Ipv4Cidr {
    /// The network `addr/prefix`; host bits of `addr` are cleared.
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Result<Self, CidrError> {
        if prefix > 32 {
            return Err(CidrError {
                text: format!("{addr}/{prefix}"),
                why: "prefix longer than 32",
            });
        }
        Ok(Self {
            base: u32::from(addr) & mask(prefix),
            prefix,
        })
    }

    /// The network `octets/prefix` for constants; a prefix over 32 is taken as 32.
    pub const fn v4(octets: [u8; 4], prefix: u8) -> Self {
        let prefix = if prefix > 32 { 32 } else { prefix };
        Self {
            base: u32::from_be_bytes(octets) & mask(prefix),
            prefix,
        }
    }

    /// The network address.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.base)
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Number of addresses in the block (network and broadcast included).
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// The `n`-th address of the block (0 is the network address), `None` outside it.
    pub fn nth(&self, n: u64) -> Option<Ipv4Addr> {
        if n >= self.size() {
            return None;
        }
        u32::try_from(n).ok().map(|n| Ipv4Addr::from(self.base + n))
    }

    /// The index of `ip` inside the block, `None` outside it.
    pub fn index_of(&self, ip: Ipv4Addr) -> Option<u64> {
        let ip = u32::from(ip);
        (ip & mask(self.prefix) == self.base).then(|| u64::from(ip - self.base))
    }

    /// Whether `ip` lies in the block.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.index_of(ip).is_some()
    }

    /// The `n`-th sub-block of prefix length `prefix` (which must not be shorter than this block's).
    pub fn subnet(&self, prefix: u8, n: u64) -> Result<Self, CidrError> {
        let err = |why| CidrError {
            text: format!("{self} /{prefix} #{n}"),
            why,
        };
        if prefix < self.prefix || prefix > 32 {
            return Err(err("sub-block prefix outside the pool's"));
        }
        if n >= self.subnet_count(prefix) {
            return Err(err("pool exhausted"));
        }
        let step = 1u64 << (32 - u32::from(prefix));
        let base = u64::from(self.base) + n * step;
        let base = u32::try_from(base).map_err(|_| err("pool exhausted"))?;
        Self::new(Ipv4Addr::from(base), prefix)
    }

    /// How many sub-blocks of prefix length `prefix` the block holds.
    pub fn subnet_count(&self, prefix: u8) -> u64 {
        if prefix < self.prefix || prefix > 32 {
            return 0;
        }
        1u64 << (u32::from(prefix) - u32::from(self.prefix))
    }
}

const fn mask(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix as u32)
    }
}

impl FromStr for Ipv4Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |why| CidrError {
            text: s.to_string(),
            why,
        };
        let (addr, prefix) = s.trim().split_once('/').ok_or_else(|| err("missing /prefix"))?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| err("bad address"))?;
        let prefix: u8 = prefix.parse().map_err(|_| err("bad prefix length"))?;
        Self::new(addr, prefix).map_err(|_| err("prefix longer than 32"))
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network(), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_masks_and_carves() {
        let pool: Ipv4Cidr = "10.96.3.4/12".parse().unwrap();
        assert_eq!(pool.to_string(), "10.96.0.0/12");
        assert_eq!(pool.subnet_count(20), 256);
        assert_eq!(pool.subnet(20, 1).unwrap().to_string(), "10.96.16.0/20");
        assert_eq!(pool.subnet(20, 255).unwrap().to_string(), "10.111.240.0/20");
        assert!(pool.subnet(20, 256).is_err());
        assert!(pool.subnet(8, 0).is_err());
        let block = pool.subnet(24, 2).unwrap();
        assert_eq!(block.nth(1), Some(Ipv4Addr::new(10, 96, 2, 1)));
        assert_eq!(block.nth(256), None);
        assert_eq!(block.index_of(Ipv4Addr::new(10, 96, 2, 9)), Some(9));
        assert!(!block.contains(Ipv4Addr::new(10, 96, 3, 9)));
        assert!("10.0.0.0".parse::<Ipv4Cidr>().is_err());
        assert!("10.0.0.0/33".parse::<Ipv4Cidr>().is_err());
        assert!("x/8".parse::<Ipv4Cidr>().is_err());
    }
}
