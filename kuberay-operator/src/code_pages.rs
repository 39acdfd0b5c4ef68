//! Gives back the pages of the operator's own code that only its startup used.
//!
//! Most of the operator's resident memory is its machine code and read-only data, not its caches
//! (docs/benchmarks.md). Starting up runs code that never runs again (flag and kubeconfig parsing, TLS
//! setup, API discovery, building the controllers), and the kernel maps each touched page together with
//! its neighbours (fault-around), so after startup several MiB of mapped code are never used again. Once
//! the operator has settled, [`release_startup_code`] unmaps every page of the executable that holds
//! exactly the file's bytes, with `madvise(MADV_DONTNEED)`. Code that runs again maps its page back in
//! (from the page cache while a page is there, from the file otherwise), so afterwards the resident set
//! holds what the steady state actually uses.
//!
//! Only private, non-writable mappings of the executable with no anonymous (copied-on-write) pages are
//! released: for those, dropping a page and reading it back from the file gives the same bytes. Mappings
//! that were written (relocated read-only data, `.data`, `.bss`) are left alone.
//!
//! Fault-around maps, with each page a fault needs, every neighbour the page cache holds in its 64 KiB
//! window, so what the steady state maps back would depend on how much of the file happens to be cached:
//! all of it right after the file was written (an image just unpacked, a binary just built), less when it
//! was read from disk. So the release also marks those mappings `MADV_RANDOM` (a fault then reads only its
//! own page, no read-ahead), waits for the executable's write-back (`fdatasync`: a dirty page is never
//! dropped), drops the executable's pages that no process maps from the page cache
//! (`POSIX_FADV_DONTNEED`) and reclaims the few mapped again meanwhile (`MADV_PAGEOUT`). Afterwards less
//! of the file is cached (part of `.text` stays, for reasons not yet known), and the resident set no longer
//! depends on how the file was cached before (docs/benchmarks.md, "Code layout"). Code that runs for the first time
//! after the release may read its page from the file: one small read, once.

use std::ops::Range;
use std::time::Duration;

use tracing::{info, warn};

/// How long after the operator reports ready it releases its startup code: long enough for the first lists and
/// passes of an ordinary install to have run, so the code they share with the steady state is not
/// released only to be mapped back.
pub const STARTUP_CODE_RELEASE_DELAY: Duration = Duration::from_secs(3);

/// Why the startup code could not be released (the operator keeps running either way).
#[derive(Debug, thiserror::Error)]
pub enum CodePagesError {
    /// `/proc/self/exe` or `/proc/self/smaps` could not be read.
    #[error("reading {path}: {source}")]
    Proc {
        /// The file that could not be read.
        path: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The kernel refused `madvise` for a mapping.
    #[error("madvise({advice}) of {start:#x}-{end:#x}: {source}")]
    Madvise {
        /// The advice refused (`MADV_DONTNEED`, `MADV_RANDOM`, `MADV_PAGEOUT`).
        advice: &'static str,
        /// First address of the mapping.
        start: usize,
        /// End of the mapping.
        end: usize,
        /// The error the kernel returned.
        source: std::io::Error,
    },
    /// The kernel refused to drop the executable's unmapped pages from the page cache.
    #[error("posix_fadvise(POSIX_FADV_DONTNEED) of /proc/self/exe: {0}")]
    Evict(std::io::Error),
}

/// What [`release_startup_code`] gave back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Released {
    /// Mappings of the executable that were released.
    pub mappings: usize,
    /// Resident bytes those mappings held just before (from `/proc/self/smaps`).
    pub resident_bytes: u64,
}

/// Waits [`STARTUP_CODE_RELEASE_DELAY`], then releases the startup code, logging what it gives back first: code
/// that runs after the release maps its pages back, and formatting a log line is not otherwise steady-state
/// work.
pub async fn release_after_startup() {
    tokio::time::sleep(STARTUP_CODE_RELEASE_DELAY).await;
    let releasable = match startup_code() {
        Ok(releasable) => releasable,
        Err(e) => {
            warn!(error = %e, "cannot release the startup code pages; resident memory stays higher");
            return;
        }
    };
    info!(
        mappings = releasable.len(),
        resident_kib = resident_bytes(&releasable) / 1024,
        "releasing the startup code pages of the executable"
    );
    if let Err(e) = release(&releasable) {
        warn!(error = %e, "cannot release the startup code pages; resident memory stays higher");
    }
}

/// Unmaps the pages of the executable's unmodified read-only mappings (see the module documentation).
pub fn release_startup_code() -> Result<Released, CodePagesError> {
    let releasable = startup_code()?;
    release(&releasable)?;
    Ok(Released {
        mappings: releasable.len(),
        resident_bytes: resident_bytes(&releasable),
    })
}

/// The executable's mappings that may be released now.
fn startup_code() -> Result<Vec<Mapping>, CodePagesError> {
    let exe = std::fs::read_link("/proc/self/exe").map_err(|source| CodePagesError::Proc {
        path: "/proc/self/exe",
        source,
    })?;
    let smaps = std::fs::read_to_string("/proc/self/smaps").map_err(|source| CodePagesError::Proc {
        path: "/proc/self/smaps",
        source,
    })?;
    // Any address of this program's own code marks its loaded image.
    let anchor = release_startup_code as fn() -> Result<Released, CodePagesError> as usize;
    Ok(releasable_mappings(&smaps, &exe.to_string_lossy(), anchor))
}

/// Resident bytes of `mappings` when smaps was read.
fn resident_bytes(mappings: &[Mapping]) -> u64 {
    mappings.iter().map(|m| m.resident_bytes).sum()
}

/// Unmaps every page of `mappings`, marks them for page-at-a-time faults and drops the executable's
/// unmapped pages from the page cache (see the module documentation for why all three).
fn release(mappings: &[Mapping]) -> Result<(), CodePagesError> {
    mappings
        .iter()
        .try_for_each(|mapping| advise(&mapping.range, libc::MADV_DONTNEED, "MADV_DONTNEED"))?;
    mappings
        .iter()
        .try_for_each(|mapping| advise(&mapping.range, libc::MADV_RANDOM, "MADV_RANDOM"))?;
    evict_unmapped_pages()?;
    // A file just written (an image just unpacked, a binary just built) is cached in large folios, and a
    // folio with any page still mapped (the code running this) is not evicted: reclaiming the pages mapped
    // now drops or splits those too, so the cache keeps only what is faulted from here on.
    mappings
        .iter()
        .try_for_each(|mapping| advise(&mapping.range, libc::MADV_PAGEOUT, "MADV_PAGEOUT"))
}

/// Drops the pages of the executable that no process maps from the page cache, once any still unwritten are
/// written back. Pages mapped anywhere (this process's data, another process running the same file) stay.
#[allow(unsafe_code)]
fn evict_unmapped_pages() -> Result<(), CodePagesError> {
    use std::os::fd::AsRawFd;
    let exe = std::fs::File::open("/proc/self/exe").map_err(CodePagesError::Evict)?;
    // A file written moments ago (a binary just built, an image just unpacked) still has dirty pages, which
    // neither the advice nor MADV_PAGEOUT drops: they only start its write-back. Waiting for it first lets the
    // release drop them too; on a file already on disk this returns at once. It blocks the runtime for that
    // write (tens of milliseconds for the binary's ~24 MB), once, like the rest of the release.
    if let Err(e) = exe.sync_data() {
        warn!(error = %e, "cannot write back the executable's pages; those still dirty stay cached");
    }
    // SAFETY: `exe` is an open descriptor for the whole call; the advice only affects the page cache, never
    // what reading the file returns.
    let status = unsafe { libc::posix_fadvise(exe.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    match status {
        0 => Ok(()),
        errno => Err(CodePagesError::Evict(std::io::Error::from_raw_os_error(errno))),
    }
}

/// One mapping of `/proc/self/smaps` that may be released.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mapping {
    range: Range<usize>,
    resident_bytes: u64,
}

/// What smaps says about one mapping.
#[derive(Debug)]
struct Entry {
    range: Range<usize>,
    of_exe: bool,
    read_only_private: bool,
    resident_bytes: u64,
    /// `Anonymous:` (resident copied-on-write pages), when the kernel listed it.
    anonymous_kib: Option<u64>,
    /// `Swap:` (copied-on-write pages swapped out), when the kernel listed it.
    swap_kib: Option<u64>,
}

/// The mappings of the loaded image of `exe` in `smaps` text that are private, not writable and hold no
/// copied-on-write page, resident or swapped out. The image is the run of adjacent mappings of `exe` around
/// `anchor` (an address of this program's code): another mapping of the same file (a backtrace symbolizer
/// reading debug info) may be unmapped and its range reused at any time, so it is never touched.
fn releasable_mappings(smaps: &str, exe: &str, anchor: usize) -> Vec<Mapping> {
    let mut entries: Vec<Entry> = Vec::new();
    for line in smaps.lines() {
        if let Some((range, perms, path)) = mapping_header(line) {
            entries.push(Entry {
                range,
                of_exe: path == exe,
                // `r-xp` / `r--p`: never writable, private (a shared mapping's pages are not ours alone).
                read_only_private: !perms.contains('w') && perms.ends_with('p'),
                resident_bytes: 0,
                anonymous_kib: None,
                swap_kib: None,
            });
        } else if let Some(entry) = entries.last_mut() {
            if let Some(kib) = field_kib(line, "Rss:") {
                entry.resident_bytes = kib * 1024;
            } else if let Some(kib) = field_kib(line, "Anonymous:") {
                entry.anonymous_kib = Some(kib);
            } else if let Some(kib) = field_kib(line, "Swap:") {
                entry.swap_kib = Some(kib);
            }
        }
    }
    let Some(at) = entries.iter().position(|e| e.of_exe && e.range.contains(&anchor)) else {
        return Vec::new();
    };
    let mut first = at;
    while first > 0 && entries[first - 1].of_exe && entries[first - 1].range.end == entries[first].range.start {
        first -= 1;
    }
    let mut last = at;
    while last + 1 < entries.len()
        && entries[last + 1].of_exe
        && entries[last].range.end == entries[last + 1].range.start
    {
        last += 1;
    }
    entries[first..=last]
        .iter()
        // A copied page (a relocation, a debugger's breakpoint), resident or swapped, would be lost; a
        // kernel that does not list both counts cannot show there is none.
        .filter(|e| e.read_only_private && e.anonymous_kib == Some(0) && e.swap_kib == Some(0))
        .map(|e| Mapping {
            range: e.range.clone(),
            resident_bytes: e.resident_bytes,
        })
        .collect()
}

/// `start-end perms offset dev inode [path]`: the range, permissions and path of a mapping header line.
fn mapping_header(line: &str) -> Option<(Range<usize>, &str, &str)> {
    let mut fields = line.splitn(6, ' ');
    let (start, end) = fields.next()?.split_once('-')?;
    let range = usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?;
    if perms.len() != 4 {
        return None;
    }
    let (_offset, _dev, _inode) = (fields.next()?, fields.next()?, fields.next()?);
    Some((range, perms, fields.next().unwrap_or("").trim_start()))
}

/// The value of a `Name:   123 kB` line.
fn field_kib(line: &str, name: &str) -> Option<u64> {
    line.strip_prefix(name)?.trim().strip_suffix("kB")?.trim().parse().ok()
}

/// `madvise(advice)` over `range`, for `MADV_DONTNEED`, `MADV_RANDOM` or `MADV_PAGEOUT`; `name` names the
/// advice in errors.
#[allow(unsafe_code)]
fn advise(range: &Range<usize>, advice: libc::c_int, name: &'static str) -> Result<(), CodePagesError> {
    // SAFETY: `range` is a whole mapping of the executable, private and never written (checked by
    // `releasable_mappings`: no anonymous page, no write permission). MADV_DONTNEED only drops the page
    // table entries; the next access reads the same bytes from the file, so no value any code or
    // reference relies on changes. MADV_RANDOM only changes how much a fault reads ahead, and MADV_PAGEOUT
    // reclaims clean file pages, which read back the same way.
    let status = unsafe { libc::madvise(range.start as *mut libc::c_void, range.end - range.start, advice) };
    if status == 0 {
        Ok(())
    } else {
        Err(CodePagesError::Madvise {
            advice: name,
            start: range.start,
            end: range.end,
            source: std::io::Error::last_os_error(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: &str = "/manager";

    /// An address in the fixture's code mapping.
    const ANCHOR: usize = 0x55d0_0040_0000;

    /// The mappings of a static executable as the kernel lists them, with other mappings around.
    fn smaps(relro_anonymous_kib: u64, text_anonymous_kib: u64) -> String {
        format!(
            "\
55d000000000-55d0003dc000 r--p 00000000 fd:01 123 /manager
Size:               3952 kB
Rss:                1200 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd mr mw me sd
55d0003dc000-55d0011f1000 r-xp 003dc000 fd:01 123 /manager
Size:              14420 kB
Rss:                8600 kB
Anonymous:          {text_anonymous_kib} kB
Swap:                  0 kB
VmFlags: rd ex mr mw me sd
55d0011f1000-55d00124d000 r--p 011f1000 fd:01 123 /manager
Size:                368 kB
Rss:                 368 kB
Anonymous:          {relro_anonymous_kib} kB
Swap:                  0 kB
VmFlags: rd mr mw me ac sd
55d00124d000-55d001252000 rw-p 0124d000 fd:01 123 /manager
Size:                 20 kB
Rss:                  20 kB
Anonymous:            20 kB
VmFlags: rd wr mr mw me ac sd
55d001252000-55d001260000 rw-p 00000000 00:00 0 
Size:                 56 kB
Rss:                  56 kB
Anonymous:            56 kB
VmFlags: rd wr mr mw me ac sd
7f0000000000-7f0000100000 r-xp 00000000 fd:01 456 /usr/lib/other.so
Size:               1024 kB
Rss:                 512 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Size:                132 kB
Rss:                  16 kB
Anonymous:            16 kB
VmFlags: rd wr mr mw me gd ac
"
        )
    }

    #[test]
    fn only_the_executables_unwritten_read_only_mappings_are_released() {
        let found = releasable_mappings(&smaps(368, 0), EXE, ANCHOR);
        assert_eq!(
            found,
            vec![
                Mapping {
                    range: 0x55d0_0000_0000..0x55d0_003d_c000,
                    resident_bytes: 1200 * 1024,
                },
                Mapping {
                    range: 0x55d0_003d_c000..0x55d0_011f_1000,
                    resident_bytes: 8600 * 1024,
                },
            ]
        );
    }

    #[test]
    fn a_mapping_with_copied_pages_is_kept_even_if_read_only() {
        // Relocated read-only data not yet written, and code a debugger patched.
        let found = releasable_mappings(&smaps(0, 4), EXE, ANCHOR);
        let ranges: Vec<_> = found.iter().map(|m| m.range.start).collect();
        assert_eq!(ranges, vec![0x55d0_0000_0000, 0x55d0_011f_1000]);
    }

    #[test]
    fn another_executable_releases_nothing() {
        assert!(releasable_mappings(&smaps(368, 0), "/usr/bin/other", ANCHOR).is_empty());
    }

    #[test]
    fn paths_with_spaces_are_compared_whole() {
        let text = "1000-2000 r-xp 00000000 fd:01 1 /opt/my operator\nRss: 4 kB\nAnonymous: 0 kB\nSwap: 0 kB\n";
        assert_eq!(releasable_mappings(text, "/opt/my operator", 0x1800).len(), 1);
        assert!(releasable_mappings(text, "/opt/my", 0x1800).is_empty());
    }

    #[test]
    fn swapped_copies_or_missing_counts_keep_a_mapping() {
        let text = |fields: &str| format!("1000-2000 r--p 00000000 fd:01 1 /manager\nRss: 4 kB\n{fields}");
        assert!(releasable_mappings(&text("Anonymous: 0 kB\nSwap: 4 kB\n"), EXE, 0x1800).is_empty());
        assert!(releasable_mappings(&text("Anonymous: 0 kB\n"), EXE, 0x1800).is_empty());
        assert!(releasable_mappings(&text("Swap: 0 kB\n"), EXE, 0x1800).is_empty());
        assert_eq!(
            releasable_mappings(&text("Anonymous: 0 kB\nSwap: 0 kB\n"), EXE, 0x1800).len(),
            1
        );
    }

    #[test]
    fn only_the_loaded_image_is_released_not_another_mapping_of_the_file() {
        // A symbolizer's separate read-only mapping of the same file, far from the image.
        let other =
            "7f0000000000-7f0000400000 r--p 00000000 fd:01 123 /manager\nRss: 8 kB\nAnonymous: 0 kB\nSwap: 0 kB\n";
        let text = format!("{}{other}", smaps(368, 0));
        let found = releasable_mappings(&text, EXE, ANCHOR);
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|m| m.range.start < 0x7f00_0000_0000));
        assert!(
            releasable_mappings(&text, EXE, 0x1234).is_empty(),
            "no image around the anchor: nothing"
        );
    }

    #[test]
    fn releasing_this_test_binarys_code_keeps_it_running() {
        // The real call on a running process: the code the test runs next faults back in.
        let released = release_startup_code().unwrap();
        assert!(released.mappings >= 1, "{released:?}");
        let again = release_startup_code().unwrap();
        assert_eq!(again.mappings, released.mappings);
        // Only what ran in between (this test, the tests beside it) was mapped back.
        assert!(
            again.resident_bytes < released.resident_bytes,
            "{again:?} after {released:?}"
        );
    }
}
