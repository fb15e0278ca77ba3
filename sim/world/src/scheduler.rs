//! The discrete-event queue: events ordered by `(time, sequence number)`, so a run is a pure
//! function of its inputs. With [`Order::Shuffle`], events due at the same instant come out in
//! a seeded random order instead, to explore interleavings of concurrent agents.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use crate::clock::{Clock, Instant};

/// How same-time events are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Order {
    /// In the order they were scheduled.
    #[default]
    Fifo,
    /// In a random order drawn from the run's `schedule` stream.
    Shuffle,
}

#[derive(Debug)]
struct Entry<E> {
    at: Instant,
    tie: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.tie, self.seq) == (o.at, o.tie, o.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.tie, self.seq).cmp(&(o.at, o.tie, o.seq))
    }
}

/// A min-queue of events with the clock it drives.
#[derive(Debug)]
pub struct Scheduler<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    clock: Clock,
    seq: u64,
    order: Order,
    rng: ChaCha8Rng,
    popped: u64,
}

impl<E> Scheduler<E> {
    pub fn new(order: Order, rng: ChaCha8Rng) -> Self {
        Scheduler {
            heap: BinaryHeap::new(),
            clock: Clock::default(),
            seq: 0,
            order,
            rng,
            popped: 0,
        }
    }

    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Events handled so far.
    pub fn events_handled(&self) -> u64 {
        self.popped
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at `at` (never before now).
    pub fn at(&mut self, at: Instant, event: E) {
        let at = at.max(self.clock.now());
        let tie = match self.order {
            Order::Fifo => 0,
            Order::Shuffle => self.rng.random(),
        };
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            at,
            tie,
            seq: self.seq,
            event,
        }));
    }

    /// The next event, moving the clock to its time.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let Reverse(e) = self.heap.pop()?;
        self.clock.advance_to(e.at);
        self.popped += 1;
        Some((e.at, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    fn drain(order: Order, seed: u64) -> Vec<(u64, u32)> {
        let mut s = Scheduler::new(order, stream(seed, "schedule"));
        for (t, e) in [(5, 1), (1, 2), (5, 3), (5, 4), (0, 5), (5, 6)] {
            s.at(Instant(t), e);
        }
        std::iter::from_fn(|| s.pop().map(|(t, e)| (t.0, e))).collect()
    }

    #[test]
    fn fifo_orders_by_time_then_schedule_order() {
        assert_eq!(
            drain(Order::Fifo, 1),
            [(0, 5), (1, 2), (5, 1), (5, 3), (5, 4), (5, 6)]
        );
    }

    #[test]
    fn shuffle_permutes_only_same_time_events_and_is_seeded() {
        let a = drain(Order::Shuffle, 1);
        assert_eq!(a, drain(Order::Shuffle, 1));
        assert_eq!(&a[..2], &[(0, 5), (1, 2)]);
        let mut same: Vec<u32> = a[2..].iter().map(|x| x.1).collect();
        same.sort();
        assert_eq!(same, [1, 3, 4, 6]);
        let differs = (2..40).any(|seed| drain(Order::Shuffle, seed) != a);
        assert!(differs, "some seed must give another interleaving");
    }

    #[test]
    fn the_past_is_clamped_to_now() {
        let mut s = Scheduler::new(Order::Fifo, stream(0, "schedule"));
        s.at(Instant(10), 'a');
        s.pop();
        s.at(Instant(3), 'b');
        assert_eq!(s.pop(), Some((Instant(10), 'b')));
    }
}
