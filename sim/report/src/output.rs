//! Output files are written to a temporary file beside their destination and renamed into
//! place, so a failed run never leaves a half-written report; [`Outputs`] does it for every
//! file of a command at once, so a failure leaves every old file as it was.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use loopsim_world::temporaries::{track, untrack};

/// A file being written; it appears under its name only on [`AtomicFile::commit`].
pub struct AtomicFile {
    tmp: PathBuf,
    dest: PathBuf,
    out: Option<BufWriter<File>>,
}

impl AtomicFile {
    pub fn create(dest: &Path) -> io::Result<AtomicFile> {
        if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        AtomicFile::beside(dest)
    }

    /// A temporary beside `dest`, in a folder that exists.
    fn beside(dest: &Path) -> io::Result<AtomicFile> {
        let tmp = tmp_name(dest, "tmp");
        let out = BufWriter::new(File::create(&tmp)?);
        track(&tmp);
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
            out: Some(out),
        })
    }

    /// Flushes, syncs and renames into place.
    pub fn commit(mut self) -> io::Result<()> {
        let out = self.out.take().expect("not committed yet");
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&self.tmp, &self.dest)?;
        untrack(&self.tmp);
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.as_mut().expect("open").write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().expect("open").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.out.is_some() {
            let _ = std::fs::remove_file(&self.tmp);
            untrack(&self.tmp);
        }
    }
}

/// Writes `bytes` to `dest` atomically.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(dest)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Every output of one command. Files are written to temporaries beside their destinations
/// and put in place only by [`Outputs::commit`], all together: if any cannot be written or
/// moved, no old file has been replaced and no temporary is left behind.
#[derive(Default)]
pub struct Outputs {
    /// (temporary, destination), in the order written.
    staged: Vec<(PathBuf, PathBuf)>,
    /// Folders this command created, removed again on failure when empty.
    created: Vec<PathBuf>,
    /// Private folders that other writers (plots) fill.
    staging: Vec<PathBuf>,
    /// Old files of an earlier run this command's outputs make stale (removed on commit).
    stale: Vec<PathBuf>,
    committed: bool,
}

fn tmp_name(dest: &Path, what: &str) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.{what}-{}", std::process::id()))
}

impl Outputs {
    pub fn new() -> Self {
        Self::default()
    }

    fn make_dir(&mut self, dir: &Path) -> io::Result<()> {
        if dir.as_os_str().is_empty() || dir.is_dir() {
            return Ok(());
        }
        // Remember the topmost folder that did not exist.
        let mut top = dir.to_path_buf();
        while let Some(p) = top.parent() {
            if p.as_os_str().is_empty() || p.exists() {
                break;
            }
            top = p.to_path_buf();
        }
        std::fs::create_dir_all(dir)?;
        self.created.push(top);
        Ok(())
    }

    /// Writes `bytes` for `dest` (to a temporary until commit).
    pub fn write(&mut self, dest: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut f = self.create(dest)?;
        f.write_all(bytes)?;
        self.finish(f)
    }

    /// A file to stream into (a sweep's rows); hand it back with [`Outputs::finish`].
    pub fn create(&mut self, dest: &Path) -> io::Result<AtomicFile> {
        if let Some(dir) = dest.parent() {
            self.make_dir(dir)?;
        }
        AtomicFile::beside(dest)
    }

    /// Flushes a streamed file and stages it.
    pub fn finish(&mut self, mut f: AtomicFile) -> io::Result<()> {
        let out = f.out.take().expect("not finished yet");
        let file = out.into_inner().map_err(|e| e.into_error());
        let staged = (std::mem::take(&mut f.tmp), f.dest.clone());
        match file.and_then(|file| file.sync_all()) {
            Ok(()) => {
                self.staged.push(staged);
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&staged.0);
                untrack(&staged.0);
                Err(e)
            }
        }
    }

    /// A private folder for files another writer makes for `dir`; [`Outputs::adopt`] stages
    /// what it holds.
    pub fn staging_dir(&mut self, dir: &Path) -> io::Result<PathBuf> {
        self.make_dir(dir)?;
        let s = dir.join(format!(".loopsim-staging-{}", std::process::id()));
        if s.exists() {
            std::fs::remove_dir_all(&s)?;
        }
        std::fs::create_dir(&s)?;
        track(&s);
        self.staging.push(s.clone());
        Ok(s)
    }

    /// Stages every file of a staging folder for `dir`, by name (sorted).
    pub fn adopt(&mut self, staging: &Path, dir: &Path) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = std::fs::read_dir(staging)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<io::Result<_>>()?;
        names.sort();
        for n in &names {
            self.staged.push((staging.join(n), dir.join(n)));
        }
        Ok(names)
    }

    /// Removes `path` when the command's outputs are put in place (an old file that would
    /// otherwise sit beside the new ones as if it were theirs).
    pub fn remove_on_commit(&mut self, path: &Path) {
        self.stale.push(path.to_path_buf());
    }

    /// Every destination staged so far.
    pub fn destinations(&self) -> impl Iterator<Item = &Path> {
        self.staged.iter().map(|(_, d)| d.as_path())
    }

    /// Puts every staged file in place. Old files are moved aside first and restored if a
    /// later move fails.
    pub fn commit(mut self) -> io::Result<()> {
        for (_, dest) in &self.staged {
            if dest.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("{} is a folder, not a file", dest.display()),
                ));
            }
        }
        let mut done: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
        let mut failure = None;
        for (tmp, dest) in &self.staged {
            let backup = if dest.exists() {
                let b = tmp_name(dest, "old");
                if let Err(e) = std::fs::rename(dest, &b) {
                    failure = Some(e);
                    break;
                }
                track(&b);
                Some(b)
            } else {
                None
            };
            if let Err(e) = std::fs::rename(tmp, dest) {
                if let Some(b) = &backup {
                    let _ = std::fs::rename(b, dest);
                    untrack(b);
                }
                failure = Some(e);
                break;
            }
            untrack(tmp);
            done.push((dest.clone(), backup));
        }
        if let Some(e) = failure {
            for (dest, backup) in done.into_iter().rev() {
                match backup {
                    Some(b) => {
                        let _ = std::fs::rename(&b, &dest);
                        untrack(&b);
                    }
                    None => {
                        let _ = std::fs::remove_file(&dest);
                    }
                }
            }
            return Err(e);
        }
        for p in &self.stale {
            let _ = std::fs::remove_file(p);
        }
        for (_, backup) in done {
            if let Some(b) = backup {
                let _ = std::fs::remove_file(&b);
                untrack(&b);
            }
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        if !self.committed {
            for (tmp, _) in &self.staged {
                let _ = std::fs::remove_file(tmp);
                untrack(tmp);
            }
        }
        for s in &self.staging {
            let _ = std::fs::remove_dir_all(s);
            untrack(s);
        }
        if !self.committed {
            for d in self.created.iter().rev() {
                // Only folders left empty: never anything the user had.
                let _ = remove_empty_tree(d);
            }
        }
    }
}

/// Removes `dir` and empty folders below it; stops at the first file.
fn remove_empty_tree(dir: &Path) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            remove_empty_tree(&p)?;
        }
    }
    std::fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_committed_files_appear() {
        let dir = std::env::temp_dir().join(format!("loopsim-atomic-{}", std::process::id()));
        let dest = dir.join("a/summary.json");
        {
            let mut f = AtomicFile::create(&dest).unwrap();
            f.write_all(b"half").unwrap();
            assert!(!dest.exists());
        }
        assert!(!dest.exists(), "a dropped file leaves nothing");
        assert_eq!(
            std::fs::read_dir(dest.parent().unwrap()).unwrap().count(),
            0,
            "no temporary left behind"
        );
        write_atomic(&dest, b"{}").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"{}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                let bytes = if p.is_dir() {
                    b"<dir>".to_vec()
                } else {
                    std::fs::read(&p).unwrap()
                };
                (p.file_name().unwrap().to_string_lossy().into_owned(), bytes)
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn outputs_are_all_or_nothing() {
        let dir = std::env::temp_dir().join(format!("loopsim-outputs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("report/plots.png")).unwrap();
        std::fs::write(dir.join("report/summary.json"), b"old").unwrap();
        let before = listing(&dir.join("report"));
        {
            let mut out = Outputs::new();
            out.write(&dir.join("report/summary.json"), b"new").unwrap();
            out.write(&dir.join("report/runs.csv"), b"rows").unwrap();
            // A folder where the last file should go: nothing may change.
            out.write(&dir.join("report/plots.png"), b"png").unwrap();
            let staging = out.staging_dir(&dir.join("report")).unwrap();
            std::fs::write(staging.join("cost.svg"), b"svg").unwrap();
            out.adopt(&staging, &dir.join("report")).unwrap();
            let err = out.commit().unwrap_err();
            assert!(err.to_string().contains("is a folder"), "{err}");
        }
        assert_eq!(
            listing(&dir.join("report")),
            before,
            "the old report is intact, no temporaries"
        );
        // A folder the command created for nothing is removed again.
        {
            let mut out = Outputs::new();
            out.write(&dir.join("new/deep/a.txt"), b"a").unwrap();
        }
        assert!(!dir.join("new").exists());
        // And a good commit replaces every file.
        let mut out = Outputs::new();
        out.write(&dir.join("report/summary.json"), b"new").unwrap();
        out.write(&dir.join("report/runs.csv"), b"rows").unwrap();
        out.commit().unwrap();
        assert_eq!(
            std::fs::read(dir.join("report/summary.json")).unwrap(),
            b"new"
        );
        assert_eq!(listing(&dir.join("report")).len(), 3);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_move_restores_the_old_files() {
        let dir = std::env::temp_dir().join(format!("loopsim-rollback-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), b"old a").unwrap();
        let mut out = Outputs::new();
        out.write(&dir.join("a.txt"), b"new a").unwrap();
        out.write(&dir.join("b.txt"), b"new b").unwrap();
        // b's destination becomes a folder after staging: the commit must fail and roll back.
        std::fs::create_dir(dir.join("b.txt")).unwrap();
        assert!(out.commit().is_err());
        assert_eq!(std::fs::read(dir.join("a.txt")).unwrap(), b"old a");
        let names: Vec<String> = listing(&dir).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a.txt", "b.txt"], "no temporaries or backups left");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
