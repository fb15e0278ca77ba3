//! Tool names as the controller keeps them: interned once per process, so a name is copied
//! into every map, streak and history entry without allocating and without the atomic count
//! of a shared pointer (on the per-call path those counts cost more than the map lookups).
//!
//! A process meets a handful of tool names, so they are kept for its lifetime. Memory stays
//! bounded all the same: past [`MAX_INTERNED`] names, or for a name longer than
//! [`MAX_INTERNED_LEN`] bytes, a name is reference-counted instead.
//!
//! ```
//! use loopsim_engine::tool_name::ToolName;
//!
//! let a = ToolName::new("read_file");
//! let b = ToolName::new(&String::from("read_file"));
//! assert_eq!(a, b);
//! assert_eq!(&*a, "read_file");
//! assert!(a.is_interned());
//! ```

use std::borrow::Borrow;
use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};

/// Names interned for the process's lifetime, at most.
pub const MAX_INTERNED: usize = 16_384;
/// Longer names are reference-counted, never interned.
pub const MAX_INTERNED_LEN: usize = 256;

/// A tool name; equal names compare equal whichever way each is kept.
#[derive(Clone)]
pub struct ToolName(Repr);

#[derive(Clone)]
enum Repr {
    /// One copy per distinct text in the process: equal texts share the pointer.
    Interned(&'static str),
    Shared(Arc<str>),
}

/// The process's interned names.
static INTERNED: Mutex<Option<FxHashSet<&'static str>>> = Mutex::new(None);

/// The process-wide copy of `name`, or `None` once the table is full or the name too long.
fn intern(name: &str) -> Option<&'static str> {
    if name.len() > MAX_INTERNED_LEN {
        return None;
    }
    // A poisoned lock only means another thread panicked mid-insert of a leaked string: the
    // set is still consistent.
    let mut table = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    intern_in(
        table.get_or_insert_with(FxHashSet::default),
        name,
        MAX_INTERNED,
    )
}

/// The copy of `name` in `table`, added while the table has fewer than `cap` names.
fn intern_in(table: &mut FxHashSet<&'static str>, name: &str, cap: usize) -> Option<&'static str> {
    if let Some(&s) = table.get(name) {
        return Some(s);
    }
    if table.len() >= cap {
        return None;
    }
    let s: &'static str = Box::leak(name.into());
    table.insert(s);
    Some(s)
}

thread_local! {
    /// This thread's recent names, in front of the shared table (whose lock every call would
    /// otherwise take).
    static RECENT: RefCell<FxHashMap<Box<[u8]>, ToolName>> = RefCell::default();
}

/// Names a thread remembers before it starts over (bounds a stream of ever-new names).
const RECENT_CAPACITY: usize = 4096;

impl ToolName {
    pub fn new(name: &str) -> ToolName {
        Self::lookup(name.as_bytes(), || Some(name)).expect("text")
    }

    /// The name of UTF-8 bytes, or `None` when they are not UTF-8 (an escaped lone surrogate).
    pub fn from_bytes(name: &[u8]) -> Option<ToolName> {
        Self::lookup(name, || std::str::from_utf8(name).ok())
    }

    fn lookup<'a>(bytes: &[u8], text: impl FnOnce() -> Option<&'a str>) -> Option<ToolName> {
        RECENT.with(|recent| {
            let mut recent = recent.borrow_mut();
            if let Some(name) = recent.get(bytes) {
                return Some(name.clone());
            }
            let text = text()?;
            let name = ToolName(match intern(text) {
                Some(s) => Repr::Interned(s),
                None => Repr::Shared(text.into()),
            });
            if recent.len() >= RECENT_CAPACITY {
                recent.clear();
            }
            recent.insert(bytes.into(), name.clone());
            Some(name)
        })
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Interned(s) => s,
            Repr::Shared(s) => s,
        }
    }

    /// Whether the name is the process-wide copy (cloning it costs nothing).
    pub fn is_interned(&self) -> bool {
        matches!(self.0, Repr::Interned(_))
    }
}

impl std::ops::Deref for ToolName {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for ToolName {
    fn from(name: &str) -> ToolName {
        ToolName::new(name)
    }
}

impl PartialEq for ToolName {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            // Interned texts are unique: the pointers decide.
            (Repr::Interned(a), Repr::Interned(b)) => std::ptr::eq(*a, *b),
            _ => self.as_str() == other.as_str(),
        }
    }
}

impl Eq for ToolName {}

impl PartialEq<str> for ToolName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ToolName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// As the text hashes, so a map keyed by names can be asked with a `&str`.
impl std::hash::Hash for ToolName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for ToolName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ToolName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn equal_names_are_equal_whichever_way_they_are_kept() {
        let interned = ToolName::new("terminal");
        let shared = ToolName(Repr::Shared("terminal".into()));
        let other = ToolName::new("terminal2");
        assert!(interned.is_interned() && !shared.is_interned());
        assert_eq!(interned, shared);
        assert_eq!(shared, interned);
        assert_ne!(interned, other);
        assert_ne!(shared, other);
        let s = rustc_hash::FxBuildHasher;
        assert_eq!(s.hash_one(&interned), s.hash_one("terminal"));
        assert_eq!(s.hash_one(&shared), s.hash_one("terminal"));
        let mut m = FxHashMap::default();
        m.insert(shared, 1);
        assert_eq!(m.get("terminal"), Some(&1));
        assert_eq!(m.get(&interned), Some(&1));
    }

    #[test]
    fn a_full_table_keeps_its_names_and_takes_no_more() {
        let mut table = FxHashSet::default();
        let a = intern_in(&mut table, "a", 2).unwrap();
        let b = intern_in(&mut table, "b", 2).unwrap();
        assert!(intern_in(&mut table, "c", 2).is_none());
        assert!(std::ptr::eq(intern_in(&mut table, "a", 2).unwrap(), a));
        assert!(std::ptr::eq(intern_in(&mut table, "b", 2).unwrap(), b));
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn long_names_and_invalid_bytes_are_not_interned() {
        let long = "t".repeat(MAX_INTERNED_LEN + 1);
        let a = ToolName::new(&long);
        assert!(!a.is_interned());
        assert_eq!(a, ToolName::new(&long));
        assert_eq!(&*a, long);
        assert!(ToolName::from_bytes(b"\xed\xa0\x80").is_none());
        assert_eq!(
            ToolName::from_bytes("caf\u{e9}".as_bytes()).unwrap(),
            "caf\u{e9}"
        );
    }

    #[test]
    fn names_seen_on_other_threads_are_the_same_copy() {
        let here = ToolName::new("web_extract");
        let there = std::thread::spawn(|| ToolName::new("web_extract"))
            .join()
            .unwrap();
        match (&here.0, &there.0) {
            (Repr::Interned(a), Repr::Interned(b)) => assert!(std::ptr::eq(*a, *b)),
            _ => panic!("both interned"),
        }
    }

    #[test]
    fn a_thread_meeting_ever_new_names_keeps_a_bounded_table() {
        std::thread::spawn(|| {
            for i in 0..RECENT_CAPACITY + 10 {
                let name = format!("recent-bound-{i}");
                assert_eq!(ToolName::new(&name), name.as_str());
            }
            RECENT.with(|r| assert!(r.borrow().len() <= RECENT_CAPACITY));
        })
        .join()
        .unwrap();
    }
}
