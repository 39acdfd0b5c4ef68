//! Telling a pass whose copy of an object predates the controller's own last status write, so that it leaves
//! the status to a later pass instead of sending a write bound to conflict (see [`StaleStatusGuard`]). Pure
//! bookkeeping: the controller feeds it versions from its status writes and its watch.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// Remembers, per object, the `resourceVersion` its latest status write was computed from, until the
/// watch cache shows a later version.
///
/// Status writes do not trigger passes, but a child's change does, often before the watch has delivered
/// the status just written. A pass that reads that older copy computes its status against the old one:
/// the write is bound to answer 409 Conflict (it carries the version it read as a precondition), and
/// anything derived from the old conditions (a transition Event) would be done a second time. With the
/// guard the pass leaves its status step to a later pass instead, without the status request; the watch
/// can start that pass as soon as it delivers a later version ([`StaleStatusGuard::caught_up`]).
///
/// Comparing versions for equality only is enough, without ordering them (which the API does not
/// allow): the write was conditional on the version read, so the next version of the object is the
/// write itself, and the watch cache never goes back. A write that changed nothing keeps the version,
/// and is not remembered (the cache would never move past it).
#[derive(Debug)]
pub struct StaleStatusGuard<Key> {
    written_from: Mutex<HashMap<Key, WrittenFrom>>,
}

/// The version an object's latest status write was computed from.
#[derive(Debug)]
struct WrittenFrom {
    version: Box<str>,
    /// Whether [`StaleStatusGuard::caught_up`] has said the cache moved past it. The entry stays until a
    /// pass reads the newer copy: a pass that started from the older copy just before must still skip.
    announced: bool,
}

impl<Key> Default for StaleStatusGuard<Key> {
    fn default() -> Self {
        Self {
            written_from: Mutex::default(),
        }
    }
}

impl<Key: Hash + Eq> StaleStatusGuard<Key> {
    /// Records a status write computed from the object at `read_version` that left it at
    /// `written_version`.
    pub fn wrote(&self, key: Key, read_version: Option<&str>, written_version: Option<&str>) {
        let (Some(read), Some(written)) = (read_version, written_version) else {
            return;
        };
        if read == written {
            return;
        }
        if let Ok(mut versions) = self.written_from.lock() {
            let written_from = WrittenFrom {
                version: read.into(),
                announced: false,
            };
            versions.insert(key, written_from);
        }
    }

    /// Whether `cached_version`, the object's version in the watch cache, is still the one its latest
    /// status write was computed from. Once it is not, the object is forgotten.
    pub fn cache_is_behind(&self, key: &Key, cached_version: Option<&str>) -> bool {
        let Ok(mut versions) = self.written_from.lock() else {
            return false;
        };
        match versions.get(key) {
            Some(read) if Some(&*read.version) == cached_version => true,
            Some(_) => {
                versions.remove(key);
                false
            }
            None => false,
        }
    }

    /// Whether the watch cache, now at `cached_version`, has just moved past the version the object's
    /// latest status write was computed from: true once per write, false when nothing waited or the cache
    /// is still there. The object is forgotten only once a pass reads the newer copy
    /// ([`StaleStatusGuard::cache_is_behind`]).
    pub fn caught_up(&self, key: &Key, cached_version: Option<&str>) -> bool {
        let Ok(mut versions) = self.written_from.lock() else {
            return false;
        };
        match versions.get_mut(key) {
            Some(read) if !read.announced && Some(&*read.version) != cached_version => {
                read.announced = true;
                true
            }
            _ => false,
        }
    }

    /// Forgets a deleted object.
    pub fn forget(&self, key: &Key) {
        if let Ok(mut versions) = self.written_from.lock() {
            versions.remove(key);
        }
    }

    /// How many objects wait for the cache to show their status write.
    pub fn len(&self) -> usize {
        self.written_from.lock().map_or(0, |versions| versions.len())
    }

    /// Whether no object waits for the cache.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_holds_a_status_step_until_the_cache_moves_past_the_version_written_from() {
        let guard = StaleStatusGuard::default();
        assert!(!guard.cache_is_behind(&"a", Some("5")), "nothing written yet");
        guard.wrote("a", Some("5"), Some("6"));
        assert!(guard.cache_is_behind(&"a", Some("5")));
        assert!(
            guard.cache_is_behind(&"a", Some("5")),
            "still behind until the cache moves"
        );
        assert!(!guard.cache_is_behind(&"b", Some("5")), "per object");
        assert!(!guard.cache_is_behind(&"a", Some("6")));
        assert!(guard.is_empty(), "forgotten once the cache moved");
        assert!(!guard.cache_is_behind(&"a", Some("5")));
    }

    #[test]
    fn the_guard_says_once_when_the_cache_caught_up() {
        let guard = StaleStatusGuard::default();
        assert!(!guard.caught_up(&"a", Some("6")), "nothing waited");
        guard.wrote("a", Some("5"), Some("6"));
        assert!(!guard.caught_up(&"a", Some("5")), "still at the version written from");
        assert!(guard.caught_up(&"a", Some("6")));
        assert!(!guard.caught_up(&"a", Some("7")), "once per write");
        assert!(
            guard.cache_is_behind(&"a", Some("5")),
            "a pass that read the older copy before the cache moved still skips"
        );
        assert!(!guard.cache_is_behind(&"a", Some("6")));
        assert!(guard.is_empty(), "forgotten once a pass read the newer copy");
        guard.wrote("a", Some("6"), Some("8"));
        assert!(guard.caught_up(&"a", Some("8")), "a new write is announced again");
    }

    #[test]
    fn the_guard_remembers_no_write_that_left_the_version_or_lacks_one() {
        let guard = StaleStatusGuard::default();
        guard.wrote("a", Some("5"), Some("5"));
        guard.wrote("b", None, Some("6"));
        guard.wrote("c", Some("5"), None);
        assert!(guard.is_empty());
        guard.wrote("d", Some("5"), Some("7"));
        guard.forget(&"d");
        assert!(!guard.cache_is_behind(&"d", Some("5")));
    }
}
