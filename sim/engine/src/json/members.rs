//! A strict JSON object read member by member, building nothing: each value is either decoded
//! (a string the caller wants as text) or printed canonically. The guard reads its requests
//! this way; anything it does not expect it hands to the tree parser, which has the last word
//! on errors.

use super::parse::Parser;
use super::{Canonicalizer, Kind, ParseError};

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeforeKey,
    BeforeValue,
    AfterValue,
    End,
}

/// The members of the object a strict JSON text holds, in the order they are written
/// (duplicates included: the last one is the one `json.loads` keeps).
pub struct Members<'a> {
    p: Parser<'a, true>,
    state: State,
}

impl<'a> Members<'a> {
    /// Starts on `text`; `None` when it does not start (after whitespace) with an object, or
    /// is not UTF-8 (strict JSON never is: the tree parser names the byte).
    pub fn new(text: &'a [u8]) -> Option<Members<'a>> {
        // One check of the whole line is much cheaper than one per string run.
        Self::open(text, super::is_utf8(text))
    }

    /// [`Members::new`] on text known to be UTF-8.
    pub fn new_text(text: &'a str) -> Option<Members<'a>> {
        Self::open(text.as_bytes(), true)
    }

    fn open(text: &'a [u8], utf8: bool) -> Option<Members<'a>> {
        if !utf8 {
            return None;
        }
        let mut p = Parser::<true>::new(text);
        p.utf8 = true;
        p.skip_ws();
        if p.s.get(p.i) != Some(&b'{') {
            return None;
        }
        p.i += 1;
        p.skip_ws();
        let state = if p.s.get(p.i) == Some(&b'}') {
            p.i += 1;
            State::End
        } else {
            State::BeforeKey
        };
        Some(Members { p, state })
    }

    /// Resumes on `text` just after a member's value at `at`, where the caller has read the
    /// object's opening and first members itself. `None` when the text is not UTF-8.
    pub fn resume(text: &'a [u8], at: usize) -> Option<Members<'a>> {
        Self::resume_at(text, at, super::is_utf8(text))
    }

    /// [`Members::resume`] on text known to be UTF-8.
    pub fn resume_text(text: &'a str, at: usize) -> Option<Members<'a>> {
        Self::resume_at(text.as_bytes(), at, true)
    }

    fn resume_at(text: &'a [u8], at: usize, utf8: bool) -> Option<Members<'a>> {
        if !utf8 || at > text.len() {
            return None;
        }
        let mut p = Parser::<true>::new(text);
        p.utf8 = true;
        p.i = at;
        Some(Members {
            p,
            state: State::AfterValue,
        })
    }

    /// The next member's key as printed canonically, without its quotes: borrowed from the
    /// text when it has no escape, else printed into `buf`. `None` at the end of the object.
    pub fn next_key<'k>(&mut self, buf: &'k mut Vec<u8>) -> Result<Option<&'k [u8]>, ParseError>
    where
        'a: 'k,
    {
        let p = &mut self.p;
        match self.state {
            State::End => return Ok(None),
            State::BeforeValue => return Err(p.err("expecting value")),
            State::AfterValue => {
                p.skip_ws();
                match p.s.get(p.i) {
                    Some(b',') => {
                        p.i += 1;
                        p.skip_ws();
                    }
                    Some(b'}') => {
                        p.i += 1;
                        self.state = State::End;
                        return Ok(None);
                    }
                    _ => return Err(p.err("expecting ',' delimiter")),
                }
            }
            State::BeforeKey => {}
        }
        if p.s.get(p.i) != Some(&b'"') {
            return Err(p.err("expecting property name enclosed in double quotes"));
        }
        p.i += 1;
        let start = p.i;
        let plain = p.plain_run();
        let key: &'k [u8] = if p.s.get(start + plain) == Some(&b'"') {
            // No escape: the key prints as it is written.
            p.i += plain + 1;
            let text: &'a [u8] = p.s;
            &text[start..start + plain]
        } else {
            buf.clear();
            super::canon::string(p, buf)?;
            let n = buf.len();
            &buf[1..n - 1]
        };
        p.skip_ws();
        if p.s.get(p.i) != Some(&b':') {
            return Err(p.err("expecting ':' delimiter"));
        }
        p.i += 1;
        p.skip_ws();
        self.state = State::BeforeValue;
        Ok(Some(key))
    }

    /// Reads the current member's value. A string goes decoded into `text` when one is given;
    /// anything else is printed canonically into `printed` (both are cleared first).
    pub fn value(
        &mut self,
        canon: &mut Canonicalizer,
        text: Option<&mut Vec<u8>>,
        printed: &mut Vec<u8>,
    ) -> Result<Kind, ParseError> {
        let p = &mut self.p;
        if self.state != State::BeforeValue {
            return Err(p.err("expecting property name enclosed in double quotes"));
        }
        self.state = State::AfterValue;
        if let Some(text) = text
            && p.s.get(p.i) == Some(&b'"')
        {
            p.i += 1;
            text.clear();
            p.string_into(text)?;
            return Ok(Kind::Str);
        }
        printed.clear();
        canon.begin();
        canon.value(p, 1, printed)
    }

    /// The text from `start` (an earlier [`Members::position`]) to here.
    pub fn text(&self, start: usize) -> &'a [u8] {
        let text: &'a [u8] = self.p.s;
        &text[start..self.p.i]
    }

    /// The text from the reader's position on.
    pub fn rest(&self) -> &'a [u8] {
        let text: &'a [u8] = self.p.s;
        &text[self.p.i..]
    }

    /// Where the reader is in the text (a value's span is the positions around [`Members::value`]).
    pub fn position(&self) -> usize {
        self.p.i
    }

    /// Skips the current member's value when it is written exactly as `earlier`, the span of a
    /// value this reader's grammar accepted at this depth (a looping caller sends the same
    /// arguments twice in a row). A complete value followed by a delimiter is the whole value,
    /// so the bytes alone prove it; `false` (and nothing read) otherwise.
    pub fn skip_if_written_as(&mut self, earlier: &[u8]) -> bool {
        let p = &mut self.p;
        if self.state != State::BeforeValue || earlier.is_empty() {
            return false;
        }
        let rest = &p.s[p.i..];
        let ends = matches!(
            rest.get(earlier.len()),
            None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
        );
        if !(ends && rest.starts_with(earlier)) {
            return false;
        }
        p.i += earlier.len();
        self.state = State::AfterValue;
        true
    }

    /// Checks that nothing but whitespace follows the object.
    pub fn finish(mut self) -> Result<(), ParseError> {
        if self.state != State::End {
            return Err(self.p.err("expecting ',' delimiter"));
        }
        self.p.skip_ws();
        if self.p.i != self.p.s.len() {
            return Err(self.p.err("extra data"));
        }
        Ok(())
    }
}
