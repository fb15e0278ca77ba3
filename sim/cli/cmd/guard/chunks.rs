//! Stdin in chunks of whole lines, read on a thread of its own, each chunk checked to be UTF-8
//! in one pass (cheaper than line by line, and off the answering thread).

use std::io::Read;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};

use anyhow::{Context, Result};
use loopsim_engine::guard_protocol::Line;

/// The longest request line `guard` reads.
pub const MAX_LINE: usize = 64 << 20;

/// The size of one read.
const CHUNK: usize = 1 << 18;

/// What the reading thread has to say.
pub enum Msg {
    Lines(Chunk),
    /// The next line is longer than [`MAX_LINE`]: nothing past it was kept.
    TooLong,
    Failed(std::io::Error),
    End,
}

/// Whole lines, each with its newline, except a last line the input ends without.
pub enum Chunk {
    /// Checked to be UTF-8.
    Text(String),
    /// Not UTF-8 somewhere: each line goes to the session as bytes, which checks it (and names
    /// the line at fault).
    Bytes(Vec<u8>),
}

impl Chunk {
    fn of(data: Vec<u8>) -> Chunk {
        match String::from_utf8(data) {
            Ok(text) => Chunk::Text(text),
            Err(e) => Chunk::Bytes(e.into_bytes()),
        }
    }

    fn into_bytes(self) -> Vec<u8> {
        match self {
            Chunk::Text(t) => t.into_bytes(),
            Chunk::Bytes(b) => b,
        }
    }

    /// The lines without their newlines, blank ones included.
    pub fn lines(&self) -> impl Iterator<Item = Line<'_>> {
        let (all, text) = match self {
            Chunk::Text(t) => (t.as_bytes(), Some(t.as_str())),
            Chunk::Bytes(b) => (b.as_slice(), None),
        };
        let body = all.strip_suffix(b"\n").unwrap_or(all);
        let mut from = Some(0);
        std::iter::from_fn(move || {
            let start = from?;
            let end = memchr::memchr(b'\n', &body[start..]).map_or(body.len(), |i| start + i);
            from = (end < body.len()).then_some(end + 1);
            // A newline is a character boundary: slicing the text there cannot fail.
            Some(match text {
                Some(t) => Line::Text(&t[start..end]),
                None => Line::Bytes(&body[start..end]),
            })
        })
    }
}

/// The answering side of the reading thread.
pub struct Chunks {
    rx: Receiver<Msg>,
    /// Buffers handed back for the next reads.
    spare: SyncSender<Vec<u8>>,
}

impl Chunks {
    /// Starts reading `input` on a new thread. It stops at the input's end, at an error, or
    /// when the receiver is gone; a read that blocks forever ends with the process.
    pub fn spawn(input: impl Read + Send + 'static) -> Result<Chunks> {
        // One chunk waits while one is answered and one is read: memory stays bounded.
        let (tx, rx) = sync_channel(1);
        let (spare, spares) = sync_channel(2);
        std::thread::Builder::new()
            .name("guard-stdin".into())
            .spawn(move || read_chunks(input, &tx, &spares))
            .context("starting the stdin reader")?;
        Ok(Chunks { rx, spare })
    }

    /// The next message if the reader has one ready.
    pub fn ready(&self) -> Option<Msg> {
        match self.rx.try_recv() {
            Ok(m) => Some(m),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Msg::Failed(gone())),
        }
    }

    /// The next message, waiting for it.
    pub fn wait(&self) -> Msg {
        self.rx.recv().unwrap_or_else(|_| Msg::Failed(gone()))
    }

    /// Hands a chunk's buffer back (a large one is let go).
    pub fn recycle(&self, chunk: Chunk) {
        let buf = chunk.into_bytes();
        if buf.capacity() <= 4 * CHUNK {
            let _ = self.spare.try_send(buf);
        }
    }
}

fn gone() -> std::io::Error {
    std::io::Error::other("the stdin reader stopped")
}

/// Reads until the input ends, sending every whole line read as soon as it is there (a
/// coprocess's single request included) and keeping a line's unfinished end for the next
/// chunk.
fn read_chunks(mut input: impl Read, tx: &SyncSender<Msg>, spares: &Receiver<Vec<u8>>) {
    let mut carry: Vec<u8> = Vec::new();
    loop {
        // A recycled buffer keeps its old bytes: only what a read fills is ever looked at, so
        // zeroing it again for every chunk would be wasted work.
        let mut data = spares.try_recv().unwrap_or_default();
        data.resize(CHUNK.max(carry.len() + CHUNK / 2), 0);
        data[..carry.len()].copy_from_slice(&carry);
        let mut end = carry.len();
        // `data[..searched]` has no newline.
        let mut searched = 0;
        let last_newline = loop {
            if let Some(at) = memchr::memrchr(b'\n', &data[searched..end]) {
                break Some(searched + at);
            }
            searched = end;
            if end > MAX_LINE {
                let _ = tx.send(Msg::TooLong);
                return;
            }
            if data.len() - end < CHUNK / 2 {
                let len = (data.len() * 2).min(MAX_LINE + CHUNK + 1);
                data.resize(len.max(end + CHUNK / 2), 0);
            }
            let read = loop {
                match input.read(&mut data[end..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => break r,
                }
            };
            match read {
                Ok(0) => break None,
                Ok(n) => end += n,
                Err(e) => {
                    let _ = tx.send(Msg::Failed(e));
                    return;
                }
            }
        };
        carry.clear();
        let msg = match last_newline {
            Some(at) => {
                carry.extend_from_slice(&data[at + 1..end]);
                data.truncate(at + 1);
                Msg::Lines(Chunk::of(data))
            }
            None if end > 0 => {
                data.truncate(end);
                Msg::Lines(Chunk::of(data))
            }
            None => Msg::End,
        };
        let last = last_newline.is_none();
        if tx.send(msg).is_err() {
            return;
        }
        if last {
            if end > 0 {
                let _ = tx.send(Msg::End);
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(c: &Chunk) -> Vec<String> {
        c.lines()
            .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned())
            .collect()
    }

    #[test]
    fn a_chunk_splits_at_newlines_blank_lines_included() {
        let c = Chunk::of(b"a\n\nb c\n".to_vec());
        assert!(matches!(c, Chunk::Text(_)));
        assert_eq!(lines(&c), ["a", "", "b c"]);
        assert_eq!(lines(&Chunk::of(b"\n".to_vec())), [""]);
        assert_eq!(lines(&Chunk::of(b"last".to_vec())), ["last"]);
        let c = Chunk::of(b"ok\nbad \xff\n".to_vec());
        assert!(matches!(c, Chunk::Bytes(_)));
        assert_eq!(lines(&c), ["ok", "bad \u{fffd}"]);
    }

    /// Reads in pieces of at most `step` bytes, as a pipe hands them out.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn all_lines(input: &'static [u8], step: usize) -> (Vec<String>, &'static str) {
        let chunks = Chunks::spawn(Trickle(input, step)).unwrap();
        let mut out = Vec::new();
        loop {
            match chunks.wait() {
                Msg::Lines(c) => {
                    out.extend(lines(&c));
                    chunks.recycle(c);
                }
                Msg::TooLong => return (out, "too long"),
                Msg::Failed(_) => return (out, "failed"),
                Msg::End => return (out, "end"),
            }
        }
    }

    #[test]
    fn a_recycled_buffer_s_old_bytes_never_reach_a_line() {
        // Old bytes full of newlines would make lines of their own if anything past what a
        // read filled were looked at.
        let (tx, rx) = sync_channel(16);
        let (spare, spares) = sync_channel(2);
        spare.send(vec![b'\n'; 4 * CHUNK]).unwrap();
        spare.send(b"zz\n".repeat(CHUNK / 3 + 1)).unwrap();
        read_chunks(Trickle(b"ab\ncd", 2), &tx, &spares);
        drop(tx);
        let mut got = Vec::new();
        let mut ended = false;
        for msg in rx {
            match msg {
                Msg::Lines(c) => got.extend(lines(&c)),
                Msg::End => ended = true,
                _ => panic!("the reader failed"),
            }
        }
        assert_eq!(got, ["ab", "cd"]);
        assert!(ended);
        assert!(spares.try_recv().is_err(), "both old buffers were used");
    }

    #[test]
    fn lines_come_whole_however_the_input_is_cut() {
        let input = "{\"a\": \"é\"}\n\n{\"b\": \"日本\"}\nend 𝄞".as_bytes();
        for step in [1, 2, 3, 5, 7, 64, 1 << 20] {
            let (lines, how) = all_lines(input, step);
            assert_eq!(how, "end", "step {step}");
            assert_eq!(
                lines,
                ["{\"a\": \"é\"}", "", "{\"b\": \"日本\"}", "end 𝄞"],
                "step {step}"
            );
        }
        assert_eq!(all_lines(b"", 8), (vec![], "end"));
        assert_eq!(all_lines(b"x\n", 1), (vec!["x".to_string()], "end"));
    }
}
