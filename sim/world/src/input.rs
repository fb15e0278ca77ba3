//! Reading an input file with a size limit: a file past the limit (or a device such as
//! `/dev/zero`, whose size the file system does not know) is refused after `limit` bytes,
//! never read into unbounded memory.

use std::io::Read;
use std::path::Path;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    #[error("more than {limit} bytes: loopsim reads {what} of at most {shown}")]
    TooLarge {
        limit: u64,
        what: &'static str,
        shown: String,
    },
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

/// The bytes of `path`, at most `limit` of them; `what` names the kind of file in the error.
pub fn read_bounded(path: &Path, limit: u64, what: &'static str) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            limit,
            what,
            shown: human(limit),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_large_files_stop_at_the_limit() {
        let err = read_bounded(Path::new("/dev/zero"), 1 << 20, "scenarios").unwrap_err();
        assert!(err.to_string().contains("at most 1 MiB"), "{err}");
        let dir = std::env::temp_dir().join(format!("loopsim-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a"), b"12345").unwrap();
        assert_eq!(read_bounded(&dir.join("a"), 5, "x").unwrap(), b"12345");
        assert!(read_bounded(&dir.join("a"), 4, "x").is_err());
        assert!(matches!(
            read_bounded(&dir.join("missing"), 4, "x"),
            Err(ReadError::Io(_))
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
