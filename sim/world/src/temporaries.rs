//! Temporary files and folders a command has on disk right now, so that a command stopped by
//! a signal (Ctrl-C, SIGTERM) removes them instead of leaving them behind. Whoever creates a
//! temporary tracks it and untracks it once it is renamed into place or removed.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Remembers a temporary file or folder.
pub fn track(path: &Path) {
    if let Ok(mut live) = LIVE.lock() {
        live.push(path.to_path_buf());
    }
}

/// Forgets a temporary that was moved into place or removed.
pub fn untrack(path: &Path) {
    if let Ok(mut live) = LIVE.lock()
        && let Some(i) = live.iter().rposition(|p| p == path)
    {
        live.swap_remove(i);
    }
}

/// Removes every temporary still on disk (from a signal handler, before the process exits).
pub fn remove_all() {
    let paths: Vec<PathBuf> = match LIVE.lock() {
        Ok(mut live) => std::mem::take(&mut *live),
        Err(_) => return,
    };
    for p in paths {
        if p.is_dir() {
            let _ = std::fs::remove_dir_all(&p);
        } else {
            let _ = std::fs::remove_file(&p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracked_temporaries_are_removed() {
        let dir = std::env::temp_dir().join(format!("loopsim-temporaries-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("staging")).unwrap();
        std::fs::write(dir.join("a.tmp"), b"x").unwrap();
        std::fs::write(dir.join("kept"), b"x").unwrap();
        track(&dir.join("a.tmp"));
        track(&dir.join("staging"));
        track(&dir.join("kept"));
        untrack(&dir.join("kept"));
        remove_all();
        assert!(!dir.join("a.tmp").exists() && !dir.join("staging").exists());
        assert!(dir.join("kept").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
