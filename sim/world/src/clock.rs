//! Virtual time: integer microseconds since the start of a run. Nothing reads the wall clock.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in virtual time, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of virtual time, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Duration {
    pub const ZERO: Duration = Duration(0);

    pub const fn from_micros(us: u64) -> Self {
        Duration(us)
    }

    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000)
    }

    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000)
    }

    /// Rounds to the nearest microsecond; negative and NaN become zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Duration(0)
        } else {
            Duration((s * 1e6).round().min(u64::MAX as f64) as u64)
        }
    }

    pub fn as_micros(self) -> u64 {
        self.0
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl Instant {
    pub const START: Instant = Instant(0);

    pub fn as_micros(self) -> u64 {
        self.0
    }

    pub fn since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.since(earlier)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, o: Duration) {
        *self = *self + o;
    }
}

/// `h:mm:ss.mmm`, fixed width, so reports are stable.
impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0 / 1_000;
        write!(
            f,
            "{}:{:02}:{:02}.{:03}",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1_000 % 60,
            ms % 1_000
        )
    }
}

/// Seconds with three decimals.
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1_000_000, self.0 / 1_000 % 1_000)
    }
}

/// The run's clock: only the scheduler moves it, and only forward.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    now: Instant,
}

impl Clock {
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Moves to `t`; time never goes backwards.
    pub fn advance_to(&mut self, t: Instant) {
        assert!(
            t >= self.now,
            "virtual time went backwards: {} -> {}",
            self.now,
            t
        );
        self.now = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_and_display() {
        let t = Instant::START + Duration::from_secs(84 * 60) + Duration::from_millis(5);
        assert_eq!(t.to_string(), "1:24:00.005");
        assert_eq!(Duration::from_secs_f64(1.5).as_micros(), 1_500_000);
        assert_eq!(Duration::from_secs_f64(-3.0), Duration::ZERO);
        assert_eq!(Duration::from_micros(2_345_678).to_string(), "2.345s");
        assert_eq!(t - Instant(5), Duration(t.0 - 5));
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn clock_only_moves_forward() {
        let mut c = Clock::default();
        c.advance_to(Instant(10));
        c.advance_to(Instant(9));
    }
}
