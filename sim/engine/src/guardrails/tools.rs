//! Tool classes: which tools are read-only, mutating, failure-tolerant, progress-making or
//! pollers. The sets differ between Hermes versions, so they hang off [`ToolSets`].

/// Which generation of Hermes's tool lists applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolSets {
    /// hermes-agent 0.19.0 (PyPI wheel).
    V0_19,
    /// The newest lists (tool_guardrails.py @06c25ac9).
    Newest,
}

const IDEMPOTENT_COMMON: &[&str] = &[
    "read_file",
    "search_files",
    "web_search",
    "web_extract",
    "session_search",
    "browser_snapshot",
    "browser_console",
    "browser_get_images",
    "mcp_filesystem_read_file",
    "mcp_filesystem_read_text_file",
    "mcp_filesystem_read_multiple_files",
    "mcp_filesystem_list_directory",
    "mcp_filesystem_list_directory_with_sizes",
    "mcp_filesystem_directory_tree",
    "mcp_filesystem_get_file_info",
    "mcp_filesystem_search_files",
];
const IDEMPOTENT_NEWEST_EXTRA: &[&str] = &["skill_view", "skills_list"];

const MUTATING_COMMON: &[&str] = &[
    "terminal",
    "execute_code",
    "write_file",
    "patch",
    "memory",
    "skill_manage",
    "browser_click",
    "browser_type",
    "browser_press",
    "browser_scroll",
    "browser_navigate",
    "send_message",
    "delegate_task",
];
const MUTATING_V0_19_EXTRA: &[&str] = &["todo", "cronjob", "process"];
const MUTATING_NEWEST_EXTRA: &[&str] = &["todo_list", "cronjob_manage", "process_manage"];

const FAILURE_TOLERANT: &[&str] = &[
    "terminal",
    "execute_code",
    "process_manage",
    "process",
    "browser_navigate",
    "web_extract",
];

const PROGRESS_RESET: &[&str] = &[
    "write_file",
    "patch",
    "terminal",
    "execute_code",
    "browser_click",
    "browser_type",
    "browser_press",
    "browser_navigate",
    "process_manage",
    "process",
    "delegate_task",
    "send_message",
    "cronjob",
    "cronjob_manage",
    "todo",
    "todo_list",
    "memory",
    "skill_manage",
];

impl ToolSets {
    pub fn is_mutating(self, tool: &str) -> bool {
        MUTATING_COMMON.contains(&tool)
            || match self {
                ToolSets::V0_19 => MUTATING_V0_19_EXTRA.contains(&tool),
                ToolSets::Newest => MUTATING_NEWEST_EXTRA.contains(&tool),
            }
    }

    /// Read-only tools whose unchanged results count as no progress.
    pub fn is_idempotent(self, tool: &str) -> bool {
        !self.is_mutating(tool)
            && (IDEMPOTENT_COMMON.contains(&tool)
                || (self == ToolSets::Newest && IDEMPOTENT_NEWEST_EXTRA.contains(&tool)))
    }
}

/// Tools whose failures are normal work output (a red test run): never a same-tool halt.
pub fn is_failure_tolerant(tool: &str) -> bool {
    FAILURE_TOLERANT.contains(&tool)
}

/// Tools whose success means the next retry of a failed call is a new experiment.
pub fn is_progress_reset(tool: &str) -> bool {
    PROGRESS_RESET.contains(&tool)
}

/// Pollers: re-invoked with identical arguments by design, exempt from streak notices.
pub fn is_repeatable(tool: &str) -> bool {
    tool == "process_manage" || tool.ends_with("_get_result") || tool.ends_with("_poll")
}

/// Files tools whose result proves a write landed (see `classify`).
pub fn is_file_mutating(tool: &str) -> bool {
    tool == "write_file" || tool == "patch"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_differ_where_hermes_did() {
        assert!(ToolSets::Newest.is_idempotent("skill_view"));
        assert!(!ToolSets::V0_19.is_idempotent("skill_view"));
        assert!(ToolSets::V0_19.is_mutating("process"));
        assert!(!ToolSets::Newest.is_mutating("process"));
        assert!(ToolSets::Newest.is_mutating("process_manage"));
        assert!(!ToolSets::V0_19.is_idempotent("execute_code"));
        assert!(is_repeatable("job_poll") && is_repeatable("x_get_result"));
        assert!(!is_repeatable("process"));
    }
}
