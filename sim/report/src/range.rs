//! The one range syntax of every flag: `START..END` stops before END, `START..=END` includes
//! it (as in Rust), and grids may add a step, `START..=END:STEP`.

/// An integer range with its step, always with at least one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntRange {
    pub start: i128,
    /// The last value the range may reach (inclusive).
    pub last: i128,
    pub step: i128,
}

impl IntRange {
    /// How many values the range holds.
    pub fn len(&self) -> u128 {
        ((self.last - self.start) / self.step) as u128 + 1
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The values, first to last.
    pub fn values(&self) -> impl Iterator<Item = i128> + '_ {
        (0..self.len()).map(|i| self.start + i as i128 * self.step)
    }
}

/// A bound: a 64-bit integer (widened, so the range's arithmetic cannot overflow).
fn int(s: &str, what: &str) -> Result<i128, String> {
    s.trim()
        .parse::<i64>()
        .map(i128::from)
        .map_err(|_| format!("{what} `{}` is not a 64-bit integer", s.trim()))
}

/// `None` when `s` is not a range (no `..`); otherwise the range, or why it is not one.
pub fn parse(s: &str, allow_step: bool) -> Option<Result<IntRange, String>> {
    let (a, rest) = s.split_once("..")?;
    Some((|| {
        let (rest, step) = match rest.split_once(':') {
            Some((r, st)) if allow_step => (r, int(st, "the step")?),
            Some(_) => return Err("a step (`:N`) is not allowed here".into()),
            None => (rest, 1),
        };
        let (inclusive, b) = match rest.strip_prefix('=') {
            Some(b) => (true, b),
            None => (false, rest),
        };
        let (start, end) = (int(a, "the start")?, int(b, "the end")?);
        if step <= 0 {
            return Err("the step must be positive".into());
        }
        let last = if inclusive { end } else { end - 1 };
        if last < start {
            return Err(format!(
                "`{s}` is empty (`{start}..{end}` stops before {end}; `{start}..={end}` includes it)"
            ));
        }
        // The last value the step reaches.
        let last = start + (last - start) / step * step;
        Ok(IntRange { start, last, step })
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_inclusive_and_steps() {
        let r = parse("2..8", true).unwrap().unwrap();
        assert_eq!(r.values().collect::<Vec<_>>(), [2, 3, 4, 5, 6, 7]);
        let r = parse("2..=8:3", true).unwrap().unwrap();
        assert_eq!(r.values().collect::<Vec<_>>(), [2, 5, 8]);
        assert_eq!(parse("0..16", false).unwrap().unwrap().len(), 16);
        assert!(parse("5..5", false).unwrap().is_err());
        assert!(parse("5..=5", false).unwrap().is_ok());
        assert!(parse("0..4:1", false).unwrap().is_err());
        assert!(parse("0..4:0", true).unwrap().is_err());
        assert!(parse("a..4", true).unwrap().unwrap_err().contains("`a`"));
        assert!(parse("7", true).is_none());
        // Extreme bounds are refused or counted without overflow.
        let wide = parse("-9223372036854775808..=9223372036854775807", true)
            .unwrap()
            .unwrap();
        assert_eq!(wide.len(), 1 << 64);
        assert!(
            parse("-170141183460469231731687303715884105728..=1", true)
                .unwrap()
                .is_err()
        );
    }
}
