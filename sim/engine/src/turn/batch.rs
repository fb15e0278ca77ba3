//! What the runtime does to a reply's batch of tool calls before it runs any of them.

/// The calls of one reply that run: Hermes keeps the first of each identical (tool,
/// arguments) pair and drops the rest before dispatch, so a dropped duplicate gets no result,
/// no guardrail check and no place in the round (`run_agent.py`,
/// `AIAgent._deduplicate_tool_calls`, called from `agent/conversation_loop.py` after the
/// reply's arguments are validated). `keys` are each call's identity, in reply order;
/// the answer is the indices kept, in order.
pub fn kept_calls<K: PartialEq>(keys: &[K]) -> Vec<usize> {
    (0..keys.len())
        .filter(|&i| runs(&keys[..i], &keys[i]))
        .collect()
}

/// Whether a call runs, given the calls of its reply before it (a simulator walking a
/// batch call by call asks this instead of [`kept_calls`]).
pub fn runs<K: PartialEq>(before: &[K], key: &K) -> bool {
    !before.contains(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_calls_in_one_reply_run_once_in_first_order() {
        // terminal(a), read(b), terminal(a), terminal(c), read(b)
        let keys = [
            ("terminal", "a"),
            ("read_file", "b"),
            ("terminal", "a"),
            ("terminal", "c"),
            ("read_file", "b"),
        ];
        assert_eq!(kept_calls(&keys), vec![0, 1, 3]);
        // The same tool with other arguments is another call.
        assert_eq!(kept_calls(&[("t", "1"), ("t", "2")]), vec![0, 1]);
        assert!(kept_calls::<u8>(&[]).is_empty());
    }
}
