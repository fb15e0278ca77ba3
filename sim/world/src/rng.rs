//! Seeded randomness. Every stream (each agent's model, each tool, faults) gets its own
//! ChaCha8 generator seeded from `(run seed, stream name)`, so adding an agent or a tool does
//! not change the draws of the others.

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use sha2::{Digest, Sha256};

/// The 32-byte seed of a named stream: SHA-256 of the run seed (little endian) and the name.
pub fn stream_seed(seed: u64, stream: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"loopsim-stream-v1\0");
    h.update(seed.to_le_bytes());
    h.update(stream.as_bytes());
    h.finalize().into()
}

/// The generator of one named stream.
pub fn stream(seed: u64, name: &str) -> ChaCha8Rng {
    ChaCha8Rng::from_seed(stream_seed(seed, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn streams_are_independent_and_reproducible() {
        let draw = |seed, name| -> Vec<u32> {
            let mut r = stream(seed, name);
            (0..4).map(|_| r.random_range(0..1_000_000)).collect()
        };
        assert_eq!(draw(7, "agent:parent/model"), draw(7, "agent:parent/model"));
        assert_ne!(
            draw(7, "agent:parent/model"),
            draw(7, "agent:child-1/model")
        );
        assert_ne!(draw(7, "agent:parent/model"), draw(8, "agent:parent/model"));
    }

    #[test]
    fn chacha8_stream_is_pinned() {
        // Guards against a silent change of generator or seeding: traces depend on it.
        assert_eq!(stream_seed(0, "x")[..4], [0x90, 0xa3, 0xcd, 0x4a]);
        assert_eq!(stream(0, "x").random::<u64>(), 10063412615435709906);
    }
}
