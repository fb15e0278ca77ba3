//! Child crashes (`agents.NAME.crash_probability`): the runtime's bridge asks at the top of
//! each iteration of a child's loop whether the child's code raises there, and the world
//! draws it as the simulator does ([`CrashStream`]). The runtime's own handling (what its
//! delegation reports for the child, what the parent sees) is then its own: the bridge posts
//! the report as a `child_crash` event.

use super::{LiveError, LiveWorld};
use loopsim_world::faults::CrashStream;

impl LiveWorld {
    /// A child's chance of crashing per iteration; the parent never crashes (its exception
    /// would end the runtime's process, which the scenario's checks refuse).
    pub(super) fn crash_probability(&self, spec: &str) -> f64 {
        match self.sc.file.agents.get(spec) {
            Some(a) if spec != "parent" => *a.crash_probability.get_ref(),
            _ => 0.0,
        }
    }

    /// Agent `name`'s loop admitted another iteration: whether its code raises now. A crash
    /// ends the agent here; its runtime makes no more requests for it.
    pub fn iteration_top(&mut self, name: &str) -> Result<bool, LiveError> {
        let a = self.agent_named(name)?;
        let ag = &mut self.agents[a];
        if ag.finished {
            return Ok(false);
        }
        let crashed = ag.crash.as_mut().is_some_and(CrashStream::crashes);
        if crashed {
            ag.finished = true;
        }
        Ok(crashed)
    }
}
