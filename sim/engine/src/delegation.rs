//! Delegation limits: how children are admitted, how they are budgeted, how long they may run,
//! and whether the parent waits for them or gets their result as a later message.

/// How a child's iterations are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChildBudget {
    /// Each child gets a fresh budget of `delegation.max_iterations` (Hermes).
    Independent,
    /// Children draw on the parent's budget (the starvation case).
    Shared,
    /// Children draw on the parent's budget but leave it this many iterations.
    Reserved(u64),
}

/// The delegation settings in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelegationPolicy {
    /// Per-child iteration cap (`delegation.max_iterations`).
    pub child_max_iterations: u64,
    /// Tasks per batch and background units at once (`delegation.max_concurrent_children`).
    pub max_concurrent_children: u32,
    /// Agents at depths below this may spawn (`delegation.max_spawn_depth`).
    pub max_spawn_depth: u32,
    /// Wall-clock limit per child in microseconds, `None` for no limit.
    pub child_timeout_us: Option<u64>,
    /// Top-level delegations run in the background.
    pub background_top_level: bool,
    pub child_budget: ChildBudget,
}

impl Default for DelegationPolicy {
    fn default() -> Self {
        DelegationPolicy {
            child_max_iterations: 50,
            max_concurrent_children: 3,
            max_spawn_depth: 1,
            child_timeout_us: None,
            background_top_level: true,
            child_budget: ChildBudget::Independent,
        }
    }
}

/// Floor Hermes applies to a positive child timeout.
pub const MIN_CHILD_TIMEOUT_SECS: f64 = 30.0;

/// `child_timeout_seconds` as Hermes reads it: <= 0 disables, a positive value is raised to 30 s.
pub fn child_timeout_us(seconds: f64) -> Option<u64> {
    if seconds.is_nan() || seconds <= 0.0 {
        None
    } else {
        Some((seconds.max(MIN_CHILD_TIMEOUT_SECS) * 1e6).min(u64::MAX as f64) as u64)
    }
}

/// What happens to one delegate_task call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Run the children and wait inside the tool call.
    Synchronous { children: u32 },
    /// Return at once; the consolidated result arrives as a new message after the turn ends.
    Background { children: u32 },
    /// A tool error: the call does not spawn anything.
    Rejected(Rejection),
}

/// Why a delegation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// More tasks than `max_concurrent_children`.
    TooManyTasks { requested: u32, limit: u32 },
    /// The caller is already at the deepest level allowed to spawn.
    DepthLimit { depth: u32, max: u32 },
    /// Nothing to spawn.
    NoTasks,
}

impl DelegationPolicy {
    /// Decides one delegate_task call from an agent at `depth` asking for `tasks` children,
    /// while `background_units` background delegations are still running.
    pub fn admit(&self, depth: u32, tasks: u32, background_units: u32) -> Admission {
        if tasks == 0 {
            return Admission::Rejected(Rejection::NoTasks);
        }
        if depth + 1 > self.max_spawn_depth {
            return Admission::Rejected(Rejection::DepthLimit {
                depth,
                max: self.max_spawn_depth,
            });
        }
        if tasks > self.max_concurrent_children {
            return Admission::Rejected(Rejection::TooManyTasks {
                requested: tasks,
                limit: self.max_concurrent_children,
            });
        }
        // At capacity a background dispatch is refused and the batch runs synchronously.
        if depth == 0
            && self.background_top_level
            && background_units < self.max_concurrent_children
        {
            Admission::Background { children: tasks }
        } else {
            Admission::Synchronous { children: tasks }
        }
    }

    /// How many delegate_task calls of one batch survive: the rest are dropped before running.
    pub fn delegate_calls_kept(&self, calls_in_batch: u32) -> u32 {
        calls_in_batch.min(self.max_concurrent_children)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_rules() {
        let p = DelegationPolicy::default();
        assert_eq!(p.admit(0, 3, 0), Admission::Background { children: 3 });
        assert_eq!(p.admit(0, 3, 3), Admission::Synchronous { children: 3 });
        assert_eq!(
            p.admit(0, 4, 0),
            Admission::Rejected(Rejection::TooManyTasks {
                requested: 4,
                limit: 3
            })
        );
        assert_eq!(
            p.admit(1, 1, 0),
            Admission::Rejected(Rejection::DepthLimit { depth: 1, max: 1 })
        );
        let deep = DelegationPolicy {
            max_spawn_depth: 2,
            ..p
        };
        assert_eq!(deep.admit(1, 2, 0), Admission::Synchronous { children: 2 });
        assert_eq!(p.delegate_calls_kept(5), 3);
    }

    #[test]
    fn timeout_floor_and_off() {
        assert_eq!(child_timeout_us(0.0), None);
        assert_eq!(child_timeout_us(-5.0), None);
        assert_eq!(child_timeout_us(5.0), Some(30_000_000));
        assert_eq!(child_timeout_us(600.0), Some(600_000_000));
    }
}
