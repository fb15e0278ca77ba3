//! Output files are written to a temporary file beside their destination and renamed into
//! place, so a failed run never leaves a half-written report.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

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
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dest.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        let out = BufWriter::new(File::create(&tmp)?);
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
        std::fs::rename(&self.tmp, &self.dest)
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
        }
    }
}

/// Writes `bytes` to `dest` atomically.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(dest)?;
    f.write_all(bytes)?;
    f.commit()
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
}
