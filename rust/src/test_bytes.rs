//! Bytes for tests of decoders that must refuse damaged input: seeded pseudo-random garbage.

/// `len` bytes from a xorshift64 generator whose state is `state` (advanced).
pub(crate) fn garbage(state: &mut u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            *state as u8
        })
        .collect()
}
