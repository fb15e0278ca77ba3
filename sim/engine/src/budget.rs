//! The iteration budget: how many model calls an agent may make in one user turn.

use std::sync::atomic::{AtomicU64, Ordering};

/// Python's `sys.maxsize`: what "unlimited" means in newer Hermes versions.
pub const UNLIMITED: u64 = i64::MAX as u64;

/// A thread-safe counter of used iterations against a cap. `used` never exceeds the cap and
/// never goes below zero, whatever mix of consume and refund threads do.
#[derive(Debug)]
pub struct IterationBudget {
    max_total: u64,
    used: AtomicU64,
}

impl IterationBudget {
    pub fn new(max_total: u64) -> Self {
        IterationBudget {
            max_total,
            used: AtomicU64::new(0),
        }
    }

    pub fn max_total(&self) -> u64 {
        self.max_total
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    pub fn remaining(&self) -> u64 {
        self.max_total.saturating_sub(self.used())
    }

    /// Takes one iteration; false (and no change) when none is left.
    pub fn consume(&self) -> bool {
        self.consume_keeping(0)
    }

    /// Takes one iteration only if more than `reserve` would remain before taking it: how
    /// children draw from a parent's budget while leaving the parent its reserve.
    pub fn consume_keeping(&self, reserve: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u < self.max_total && self.max_total - u > reserve).then_some(u + 1)
            })
            .is_ok()
    }

    /// Gives one iteration back; never below zero.
    pub fn refund(&self) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| u.checked_sub(1))
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn consume_stops_at_the_cap_and_refund_at_zero() {
        let b = IterationBudget::new(2);
        assert!(!b.refund());
        assert!(b.consume() && b.consume());
        assert!(!b.consume());
        assert_eq!((b.used(), b.remaining()), (2, 0));
        assert!(b.refund());
        assert_eq!(b.remaining(), 1);
    }

    #[test]
    fn reserve_is_kept_for_the_owner() {
        let b = IterationBudget::new(10);
        let taken = (0..20).filter(|_| b.consume_keeping(4)).count();
        assert_eq!(taken, 6);
        assert_eq!(b.remaining(), 4);
        assert!(b.consume());
    }

    #[test]
    fn invariants_hold_under_contention() {
        let b = Arc::new(IterationBudget::new(1000));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let b = Arc::clone(&b);
                std::thread::spawn(move || {
                    let (mut consumed, mut refunded) = (0u64, 0u64);
                    for i in 0..20_000u64 {
                        if (i + t) % 3 == 0 {
                            refunded += b.refund() as u64;
                        } else {
                            consumed += b.consume() as u64;
                        }
                        let u = b.used();
                        assert!(u <= 1000);
                    }
                    (consumed, refunded)
                })
            })
            .collect();
        let (mut c, mut r) = (0, 0);
        for t in threads {
            let (a, b2) = t.join().unwrap();
            c += a;
            r += b2;
        }
        assert_eq!(
            b.used(),
            c - r,
            "every successful consume and refund is accounted for"
        );
        assert!(b.used() <= 1000);
    }
}
