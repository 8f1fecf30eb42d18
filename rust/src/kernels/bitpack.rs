//! FastLanes-layout bit packing and unpacking (the layout pylance 14 writes for
//! `inline_bitpacking` and `out_of_line_bitpacking`; FORMAT.md §2.2.6 and §3.1).
//!
//! A block is always exactly 1024 values of an unsigned word type `T` with
//! `T::BITS` ∈ {8, 16, 32, 64}, packed at a width `W` (0 ≤ W ≤ T::BITS) into
//! `1024·W/T::BITS` words of `T`. The block is viewed as `LANES = 1024 / T::BITS`
//! independent *lanes*; each lane holds `T::BITS` values (its "rows") and packs them
//! as one little bit stream of `T::BITS·W` bits, i.e. exactly `W` words. Word `k` of
//! lane `l` is stored at `out[LANES·k + l]`, so the `LANES` lanes are interleaved
//! word by word: the words at one "word level" are contiguous across lanes.
//!
//! Row `r` of lane `l` is input value `FL_ORDER[r/8]·16 + (r%8)·128 + l` with
//! `FL_ORDER = [0,4,2,6,1,5,3,7]` — a transposed order: consecutive input values sit
//! in *different lanes* at the *same row*. Because every lane performs the identical
//! sequence of shifts/masks (the shifts depend only on the row and W) and the lane
//! index is always the fastest-moving index both in memory and in the input order, a
//! plain `for lane in 0..LANES { all rows unrolled }` loop is perfectly SIMD-friendly:
//! one vector register processes many lanes at once with constant shifts, unit-stride
//! loads and stores, and no cross-lane shuffles, on any vector width (SSE2 … AVX-512).
//! Here the width is dispatched at runtime to a const-generic kernel in which the row
//! loop is macro-unrolled so every shift amount and word offset is a compile-time
//! constant; LLVM then vectorises the lane loop.
//!
//! Written from the layout description only (no code copied from lance/fastlanes).

use std::fmt::Debug;
use std::ops::{BitAnd, BitOr, Shl, Shr};

/// Number of values in one FastLanes block.
pub const BLOCK_LEN: usize = 1024;

/// The transposed row order of FastLanes (3-bit bit-reversal; it is an involution).
const FL_ORDER: [usize; 8] = [0, 4, 2, 6, 1, 5, 3, 7];

mod sealed {
    /// Source of packed words (a `&[T]` or little-endian bytes).
    pub trait WordSrc<T> {
        /// Panics unless the source holds exactly `words` words.
        fn check_words(&self, words: usize);
        fn word(&self, k: usize) -> T;
    }

    /// Destination of packed words (a `&mut [T]` or little-endian bytes).
    pub trait WordSink<T> {
        /// Panics unless the sink holds exactly `words` words.
        fn check_words(&self, words: usize);
        fn set_word(&mut self, k: usize, v: T);
    }

    /// Private supertrait of [`super::BitPackWord`]: seals it and carries the
    /// per-type width dispatch and byte conversions.
    pub trait Sealed: Sized {
        fn read_le(b: &[u8]) -> Self;
        fn write_le(self, b: &mut [u8]);
        fn bit_len(self) -> usize;
        fn pack_dispatch<D: WordSink<Self> + ?Sized>(width: usize, input: &[Self; 1024], out: &mut D);
        fn unpack_dispatch<S: WordSrc<Self> + ?Sized>(width: usize, src: &S, out: &mut [Self; 1024]);
    }
}

use sealed::{WordSink, WordSrc};

/// An unsigned word type FastLanes can pack: implemented for `u8`, `u16`, `u32`, `u64`
/// only (sealed).
pub trait BitPackWord:
    sealed::Sealed
    + Copy
    + Default
    + Eq
    + Debug
    + BitOr<Output = Self>
    + BitAnd<Output = Self>
    + Shl<usize, Output = Self>
    + Shr<usize, Output = Self>
    + 'static
{
    /// Bits in the type (8, 16, 32 or 64).
    const BITS: usize;
    /// Bytes in the type.
    const BYTES: usize = Self::BITS / 8;
    /// Number of interleaved lanes in a block, `1024 / BITS`.
    const LANES: usize = 1024 / Self::BITS;
    /// The value 0.
    const ZERO: Self;
    /// All bits set.
    const ONES: Self;
}

/// Mask of the low `width` bits (`width <= T::BITS`).
#[inline(always)]
fn low_mask<T: BitPackWord>(width: usize) -> T {
    if width == 0 {
        T::ZERO
    } else {
        T::ONES >> (T::BITS - width)
    }
}

/// Index of the input value stored at (`row`, `lane`).
#[inline(always)]
fn fl_index(row: usize, lane: usize) -> usize {
    FL_ORDER[row / 8] * 16 + (row % 8) * 128 + lane
}

/// Repeats `$body` with `$row` bound to the literals 0..64, skipping those `>= $limit`
/// (`$limit` is a constant after monomorphisation, so the guards fold away).
macro_rules! unroll_rows {
    ($limit:expr, |$row:ident| $body:block) => {
        unroll_rows!(@each $limit, $row, $body;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59
            60 61 62 63)
    };
    (@each $limit:expr, $row:ident, $body:block; $($i:literal)*) => {
        $( if $i < $limit { let $row: usize = $i; $body } )*
    };
}

/// Packing kernel for a compile-time width `W` (1 ≤ W ≤ T::BITS). Every output word is
/// written exactly once.
// The carry assigned after the lane's last word is intentionally dead.
#[allow(unused_assignments)]
fn pack_kernel<T: BitPackWord, D: WordSink<T> + ?Sized, const W: usize>(input: &[T; 1024], out: &mut D) {
    out.check_words(1024 * W / T::BITS);
    let mask = low_mask::<T>(W);
    for lane in 0..T::LANES {
        let mut acc = T::ZERO;
        unroll_rows!(T::BITS, |row| {
            let v = input[fl_index(row, lane)] & mask;
            let bit = row * W;
            let word = bit / T::BITS;
            let shift = bit % T::BITS;
            acc = acc | (v << shift);
            if shift + W >= T::BITS {
                // This word of the lane is complete.
                out.set_word(T::LANES * word + lane, acc);
                acc = if shift + W > T::BITS {
                    // shift > 0 here, so T::BITS - shift < T::BITS.
                    v >> (T::BITS - shift)
                } else {
                    T::ZERO
                };
            }
        });
    }
}

/// Unpacking kernel for a compile-time width `W` (1 ≤ W ≤ T::BITS).
fn unpack_kernel<T: BitPackWord, S: WordSrc<T> + ?Sized, const W: usize>(src: &S, out: &mut [T; 1024]) {
    src.check_words(1024 * W / T::BITS);
    let mask = low_mask::<T>(W);
    for lane in 0..T::LANES {
        unroll_rows!(T::BITS, |row| {
            let bit = row * W;
            let word = bit / T::BITS;
            let shift = bit % T::BITS;
            let lo = src.word(T::LANES * word + lane) >> shift;
            let v = if shift + W > T::BITS { lo | (src.word(T::LANES * (word + 1) + lane) << (T::BITS - shift)) } else { lo };
            out[fl_index(row, lane)] = v & mask;
        });
    }
}

impl<T: BitPackWord> WordSrc<T> for [T] {
    #[inline(always)]
    fn check_words(&self, words: usize) {
        assert_eq!(self.len(), words, "packed input has wrong length (words)");
    }
    #[inline(always)]
    fn word(&self, k: usize) -> T {
        self[k]
    }
}

impl<T: BitPackWord> WordSink<T> for [T] {
    #[inline(always)]
    fn check_words(&self, words: usize) {
        assert_eq!(self.len(), words, "packed output has wrong length (words)");
    }
    #[inline(always)]
    fn set_word(&mut self, k: usize, v: T) {
        self[k] = v;
    }
}

/// Little-endian packed words in a byte slice of any alignment.
struct LeBytes<'a>(&'a [u8]);

impl<T: BitPackWord> WordSrc<T> for LeBytes<'_> {
    #[inline(always)]
    fn check_words(&self, words: usize) {
        assert_eq!(self.0.len(), words * T::BYTES, "packed input has wrong length (bytes)");
    }
    #[inline(always)]
    fn word(&self, k: usize) -> T {
        T::read_le(&self.0[k * T::BYTES..k * T::BYTES + T::BYTES])
    }
}

/// Little-endian packed words written into a byte slice of any alignment.
struct LeBytesMut<'a>(&'a mut [u8]);

impl<T: BitPackWord> WordSink<T> for LeBytesMut<'_> {
    #[inline(always)]
    fn check_words(&self, words: usize) {
        assert_eq!(self.0.len(), words * T::BYTES, "packed output has wrong length (bytes)");
    }
    #[inline(always)]
    fn set_word(&mut self, k: usize, v: T) {
        v.write_le(&mut self.0[k * T::BYTES..k * T::BYTES + T::BYTES]);
    }
}

macro_rules! impl_word {
    ($t:ty, $bits:literal, [$($w:literal)*]) => {
        impl sealed::Sealed for $t {
            #[inline(always)]
            fn read_le(b: &[u8]) -> Self {
                let mut a = [0u8; $bits / 8];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn write_le(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn bit_len(self) -> usize {
                ($bits - self.leading_zeros()) as usize
            }
            fn pack_dispatch<D: WordSink<Self> + ?Sized>(width: usize, input: &[Self; 1024], out: &mut D) {
                match width {
                    0 => out.check_words(0),
                    $($w => pack_kernel::<$t, D, $w>(input, out),)*
                    _ => panic!("bit width {} exceeds {} bits", width, $bits),
                }
            }
            fn unpack_dispatch<S: WordSrc<Self> + ?Sized>(width: usize, src: &S, out: &mut [Self; 1024]) {
                match width {
                    0 => {
                        src.check_words(0);
                        *out = [0; 1024];
                    }
                    $($w => unpack_kernel::<$t, S, $w>(src, out),)*
                    _ => panic!("bit width {} exceeds {} bits", width, $bits),
                }
            }
        }
        impl BitPackWord for $t {
            const BITS: usize = $bits;
            const ZERO: Self = 0;
            const ONES: Self = <$t>::MAX;
        }
    };
}

impl_word!(u8, 8, [1 2 3 4 5 6 7 8]);
impl_word!(u16, 16, [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16]);
impl_word!(u32, 32, [
    1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
]);
impl_word!(u64, 64, [
    1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
    33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64
]);

#[inline]
fn check_width<T: BitPackWord>(width: usize) {
    assert!(width <= T::BITS, "bit width {} exceeds {} bits", width, T::BITS);
}

/// Number of `T` words one packed block of 1024 values occupies at `width` bits:
/// `1024 * width / T::BITS` (always exact). Panics if `width > T::BITS`.
#[inline]
pub fn packed_words<T: BitPackWord>(width: usize) -> usize {
    check_width::<T>(width);
    1024 * width / T::BITS
}

/// Number of bytes one packed block occupies: `packed_words::<T>(width) * size_of::<T>()`
/// (= `128 * width`). Panics if `width > T::BITS`.
#[inline]
pub fn packed_bytes<T: BitPackWord>(width: usize) -> usize {
    packed_words::<T>(width) * T::BYTES
}

/// Packs one block of 1024 values at `width` bits into `output`.
///
/// * `output.len()` must equal [`packed_words::<T>(width)`](packed_words); it is entirely
///   overwritten (not OR-ed into). With `width == 0` it must be empty.
/// * Bits of the input values at positions `>= width` are ignored (masked off), so
///   values that do not fit are silently truncated — use [`max_bit_width`] to choose W.
/// * Panics only if `width > T::BITS` or `output` has the wrong length.
pub fn pack<T: BitPackWord>(width: usize, input: &[T; 1024], output: &mut [T]) {
    check_width::<T>(width);
    T::pack_dispatch(width, input, output);
}

/// Packs one block and **appends** its `packed_bytes::<T>(width)` little-endian bytes to
/// `out` (works on any target endianness). Same masking rule as [`pack`]. Panics only if
/// `width > T::BITS` (the vector is then left unchanged).
pub fn pack_to_le_bytes<T: BitPackWord>(width: usize, input: &[T; 1024], out: &mut Vec<u8>) {
    let n = packed_bytes::<T>(width);
    let start = out.len();
    out.resize(start + n, 0);
    T::pack_dispatch(width, input, &mut LeBytesMut(&mut out[start..]));
}

/// Unpacks one block of 1024 values packed at `width` bits.
///
/// * `input.len()` must equal [`packed_words::<T>(width)`](packed_words) (empty for
///   `width == 0`, which yields 1024 zeros).
/// * Every output value is `< 2^width`; all 1024 entries of `output` are overwritten.
/// * Panics only if `width > T::BITS` or `input` has the wrong length.
pub fn unpack<T: BitPackWord>(width: usize, input: &[T], output: &mut [T; 1024]) {
    check_width::<T>(width);
    T::unpack_dispatch(width, input, output);
}

/// Like [`unpack`], but reads the packed words as little-endian `T`s straight from a byte
/// buffer of any alignment (e.g. a slice of a file page). `input.len()` must equal
/// [`packed_bytes::<T>(width)`](packed_bytes); panics only if it does not or if
/// `width > T::BITS`.
pub fn unpack_le_bytes<T: BitPackWord>(width: usize, input: &[u8], output: &mut [T; 1024]) {
    check_width::<T>(width);
    T::unpack_dispatch(width, &LeBytes(input), output);
}

/// Locates value `index` of a block: returns (lane, row).
#[inline]
fn lane_row<T: BitPackWord>(index: usize) -> (usize, usize) {
    assert!(index < 1024, "index {} out of range for a 1024-value block", index);
    let s = index / 128;
    let rem = index % 128;
    let lane = rem % T::LANES;
    // rem - lane = FL_ORDER[row / 8] * 16; FL_ORDER is its own inverse.
    let o = FL_ORDER[(rem - lane) / 16];
    (lane, o * 8 + s)
}

#[inline]
fn unpack_one_from<T: BitPackWord, S: WordSrc<T> + ?Sized>(width: usize, src: &S, index: usize) -> T {
    check_width::<T>(width);
    src.check_words(1024 * width / T::BITS);
    let (lane, row) = lane_row::<T>(index);
    if width == 0 {
        return T::ZERO;
    }
    let bit = row * width;
    let word = bit / T::BITS;
    let shift = bit % T::BITS;
    let lo = src.word(T::LANES * word + lane) >> shift;
    let v = if shift + width > T::BITS { lo | (src.word(T::LANES * (word + 1) + lane) << (T::BITS - shift)) } else { lo };
    v & low_mask::<T>(width)
}

/// Returns value `index` (0..1024) of a block packed at `width` bits without unpacking
/// the rest (reads one or two words). `input.len()` must equal
/// [`packed_words::<T>(width)`](packed_words). Panics only if `index >= 1024`,
/// `width > T::BITS` or the length is wrong. The result is `< 2^width`.
pub fn unpack_one<T: BitPackWord>(width: usize, input: &[T], index: usize) -> T {
    unpack_one_from(width, input, index)
}

/// [`unpack_one`] reading little-endian words from a byte buffer of any alignment;
/// `input.len()` must equal [`packed_bytes::<T>(width)`](packed_bytes).
pub fn unpack_one_le_bytes<T: BitPackWord>(width: usize, input: &[u8], index: usize) -> T {
    unpack_one_from(width, &LeBytes(input), index)
}

/// Number of bits needed to represent the largest value in `values` (`0` if all values
/// are zero or the slice is empty; at most `T::BITS`). Never panics.
pub fn max_bit_width<T: BitPackWord>(values: &[T]) -> usize {
    values.iter().fold(T::ZERO, |a, &b| a | b).bit_len()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct XorShift(u64);
    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
    }

    fn mask64(bits: usize) -> u64 {
        if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        }
    }

    /// Reference packer written literally from the pseudo-code in FORMAT.md §3.1,
    /// on u64 values that hold `tbits`-bit words.
    fn ref_pack(tbits: usize, w: usize, input: &[u64]) -> Vec<u64> {
        let lanes = 1024 / tbits;
        let mut out = vec![0u64; 1024 * w / tbits];
        if w == 0 {
            return out;
        }
        for lane in 0..lanes {
            for row in 0..tbits {
                let idx = FL_ORDER[row / 8] * 16 + (row % 8) * 128 + lane;
                let v = input[idx] & mask64(w);
                let bit = row * w;
                let word = bit / tbits;
                let shift = bit % tbits;
                out[lanes * word + lane] |= (v << shift) & mask64(tbits);
                if shift + w > tbits {
                    out[lanes * (word + 1) + lane] |= v >> (tbits - shift);
                }
            }
        }
        out
    }

    /// Reference unpacker: the inverse of `ref_pack`, bit by bit.
    fn ref_unpack(tbits: usize, w: usize, packed: &[u64]) -> Vec<u64> {
        let lanes = 1024 / tbits;
        let mut out = vec![0u64; 1024];
        for lane in 0..lanes {
            for row in 0..tbits {
                let idx = FL_ORDER[row / 8] * 16 + (row % 8) * 128 + lane;
                let mut v = 0u64;
                for b in 0..w {
                    let bit = row * w + b;
                    let word = packed[lanes * (bit / tbits) + lane];
                    v |= ((word >> (bit % tbits)) & 1) << b;
                }
                out[idx] = v;
            }
        }
        out
    }

    fn to_u64<T: BitPackWord + Into<u64>>(v: &[T]) -> Vec<u64> {
        v.iter().map(|&x| x.into()).collect()
    }

    fn check_type<T>(seed: u64)
    where
        T: BitPackWord + Into<u64> + TryFrom<u64>,
        <T as TryFrom<u64>>::Error: Debug,
    {
        let mut rng = XorShift(seed);
        let tb = T::BITS;
        for w in 0..=tb {
            for trial in 0..4 {
                // Trials 0/1: full-width random values (high bits must be masked);
                // trials 2/3: values that fit in w bits.
                let lim = if trial < 2 { tb } else { w };
                let vals: Vec<u64> = (0..1024).map(|_| rng.next() & mask64(lim)).collect();
                let input: [T; 1024] = std::array::from_fn(|i| T::try_from(vals[i]).unwrap());
                let masked: Vec<u64> = vals.iter().map(|v| v & mask64(w)).collect();

                let expect = ref_pack(tb, w, &vals);
                let mut packed = vec![T::ZERO; packed_words::<T>(w)];
                // Garbage in the output buffer must be overwritten, not OR-ed into.
                for p in packed.iter_mut() {
                    *p = T::ONES;
                }
                pack(w, &input, &mut packed);
                assert_eq!(to_u64(&packed), expect, "pack T={} W={}", tb, w);
                assert_eq!(ref_unpack(tb, w, &expect), masked, "ref roundtrip T={} W={}", tb, w);

                let mut bytes = vec![0xAAu8]; // pack_to_le_bytes appends
                pack_to_le_bytes(w, &input, &mut bytes);
                assert_eq!(bytes.len(), 1 + packed_bytes::<T>(w));
                assert_eq!(bytes[0], 0xAA);
                let le: Vec<u8> = expect.iter().flat_map(|x| x.to_le_bytes()[..tb / 8].to_vec()).collect();
                assert_eq!(&bytes[1..], &le[..], "pack_to_le_bytes T={} W={}", tb, w);

                let mut out = [T::ONES; 1024];
                unpack(w, &packed, &mut out);
                assert_eq!(to_u64(&out), masked, "unpack T={} W={}", tb, w);

                // Unaligned byte input (offset 1 into the vector).
                let mut out2 = [T::ONES; 1024];
                unpack_le_bytes(w, &bytes[1..], &mut out2);
                assert_eq!(to_u64(&out2), masked, "unpack_le_bytes T={} W={}", tb, w);

                for (i, &o) in out.iter().enumerate() {
                    assert_eq!(unpack_one(w, &packed, i), o, "unpack_one T={} W={} i={}", tb, w, i);
                    assert_eq!(unpack_one_le_bytes::<T>(w, &bytes[1..], i), o);
                }

                let mbw = max_bit_width(&out);
                assert!(mbw <= w);
                if trial >= 2 {
                    assert_eq!(mbw, max_bit_width(&input));
                }
            }
        }
    }

    #[test]
    fn matches_reference_u8() {
        check_type::<u8>(0x1234_5678_9abc_def1);
    }
    #[test]
    fn matches_reference_u16() {
        check_type::<u16>(0x0fed_cba9_8765_4321);
    }
    #[test]
    fn matches_reference_u32() {
        check_type::<u32>(0x9e37_79b9_7f4a_7c15);
    }
    #[test]
    fn matches_reference_u64() {
        check_type::<u64>(0xdead_beef_cafe_f00d);
    }

    /// Golden words for T = u32, W = 3, LANES = 32, derived by hand from the pseudo-code.
    ///
    /// (a) input[i] = i % 8. Row r of lane L is input index FL_ORDER[r/8]*16 + (r%8)*128 + L,
    ///     and 16, 128 are multiples of 8, so every row of lane L holds v = L % 8. The lane's
    ///     96-bit stream is v repeated in 32 three-bit fields (field r at bits 3r..3r+3),
    ///     stored as words out[L], out[32+L], out[64+L].
    ///     * L=1 (v=0b001): bits 0,3,..,93 → word0 bits 0,3,..,30 = 0x49249249;
    ///       word1 bits 33..63 step 3 = relative 1,4,..,31 = 0x92492492;
    ///       word2 bits 66..93 step 3 = relative 2,5,..,29 = 0x24924924.
    ///     * L=2 (v=0b010): bits 1,4,.. → 0x92492492, 0x24924924, 0x49249249.
    ///     * L=7 (v=0b111): all 96 bits → 0xFFFFFFFF ×3.   L=0 and L=8: all zero.
    /// (b) input[i] = i / 128. Row r holds r % 8, so each lane's fields are 0,1,..,7 repeated;
    ///     8 fields = 24 bits P = 0o76543210 = 0xFAC688, stream S = P | P<<24 | P<<48 | P<<72.
    ///     word0 = S[0..32]  = 0xFAC688 | 0x88<<24           = 0x88FAC688
    ///     word1 = S[32..64] = (P>>8) | (P<<16 mod 2^32)      = 0xC688FAC6
    ///     word2 = S[64..96] = (P>>16) | (P<<8 mod 2^32)      = 0xFAC688FA  (for every lane).
    /// (c) input[i] = (i / 16) % 8. For lane L < 16 row r holds FL_ORDER[r/8]: fields 0..7 = 0,
    ///     8..15 = 4, 16..23 = 2, 24..31 = 6. Set bits: 3r+2 for r in 8..16 (26,29,32,..,47);
    ///     3r+1 for r in 16..24 (49,52,..,70); 3r+1 and 3r+2 for r in 24..32 (73,74,..,94,95).
    ///     word0 = bits 26,29 = 0x24000000;
    ///     word1 = rel 0,3,6,9,12,15 (0x9249) + rel 17,20,23,26,29 (0x24920000) = 0x24929249;
    ///     word2 = rel 0,3,6 (0x49) + pairs {9,10},{12,13},..,{30,31}
    ///           (0x600+0x3000+0x18000+0xC0000+0x600000+0x3000000+0x18000000+0xC0000000)
    ///           = 0xDB6DB649.
    #[test]
    fn golden_u32_w3() {
        let w = 3;
        assert_eq!(packed_words::<u32>(w), 96);
        let mut out = vec![0u32; 96];

        let a: [u32; 1024] = std::array::from_fn(|i| (i % 8) as u32);
        pack(w, &a, &mut out);
        assert_eq!([out[1], out[33], out[65]], [0x49249249, 0x92492492, 0x24924924]);
        assert_eq!([out[2], out[34], out[66]], [0x92492492, 0x24924924, 0x49249249]);
        assert_eq!([out[7], out[39], out[71]], [0xFFFFFFFF; 3]);
        assert_eq!([out[0], out[32], out[64], out[8], out[40], out[72]], [0; 6]);
        let mut bytes = Vec::new();
        pack_to_le_bytes(w, &a, &mut bytes);
        assert_eq!(&bytes[4..8], &[0x49, 0x92, 0x24, 0x49]);

        let b: [u32; 1024] = std::array::from_fn(|i| (i / 128) as u32);
        pack(w, &b, &mut out);
        for lane in 0..32 {
            assert_eq!([out[lane], out[32 + lane], out[64 + lane]], [0x88FAC688, 0xC688FAC6, 0xFAC688FA]);
        }

        let c: [u32; 1024] = std::array::from_fn(|i| ((i / 16) % 8) as u32);
        pack(w, &c, &mut out);
        for lane in [0, 5, 15] {
            assert_eq!([out[lane], out[32 + lane], out[64 + lane]], [0x24000000, 0x24929249, 0xDB6DB649]);
        }
        let mut back = [0u32; 1024];
        unpack(w, &out, &mut back);
        assert_eq!(back, c);
    }

    #[test]
    fn width_zero() {
        let input: [u16; 1024] = std::array::from_fn(|i| i as u16 * 7 + 1);
        assert_eq!(packed_words::<u16>(0), 0);
        let mut empty: [u16; 0] = [];
        pack(0, &input, &mut empty);
        let mut bytes = vec![1u8, 2];
        pack_to_le_bytes(0, &input, &mut bytes);
        assert_eq!(bytes, vec![1, 2]);
        let mut out = [5u16; 1024];
        unpack(0, &empty, &mut out);
        assert_eq!(out, [0u16; 1024]);
        let mut out8 = [5u8; 1024];
        unpack_le_bytes::<u8>(0, &[], &mut out8);
        assert_eq!(out8, [0u8; 1024]);
        assert_eq!(unpack_one::<u16>(0, &empty, 1023), 0);
        assert_eq!(max_bit_width::<u16>(&[0, 0]), 0);
        assert_eq!(max_bit_width::<u64>(&[]), 0);
    }

    #[test]
    fn width_full_is_permutation() {
        let input: [u64; 1024] = std::array::from_fn(|i| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut packed = vec![0u64; 1024];
        pack(64, &input, &mut packed);
        for lane in 0..16 {
            for row in 0..64 {
                assert_eq!(packed[16 * row + lane], input[fl_index(row, lane)]);
            }
        }
        let mut out = [0u64; 1024];
        unpack(64, &packed, &mut out);
        assert_eq!(out, input);
        assert_eq!(max_bit_width(&input), 64);

        let input8: [u8; 1024] = std::array::from_fn(|i| (i * 37) as u8);
        let mut p8 = vec![0u8; 1024];
        pack(8, &input8, &mut p8);
        for lane in 0..128 {
            for row in 0..8 {
                assert_eq!(p8[128 * row + lane], input8[row * 128 + lane]);
            }
        }
    }

    #[test]
    fn high_bits_are_masked() {
        let input: [u32; 1024] = std::array::from_fn(|i| 0xFFFF_FF00 | (i as u32 & 0x1F));
        let mut packed = vec![0u32; packed_words::<u32>(5)];
        pack(5, &input, &mut packed);
        let mut out = [0u32; 1024];
        unpack(5, &packed, &mut out);
        for (i, &o) in out.iter().enumerate() {
            assert_eq!(o, i as u32 & 0x1F);
            assert_eq!(unpack_one(5, &packed, i), i as u32 & 0x1F);
        }
        assert_eq!(max_bit_width(&out), 5);
        assert_eq!(max_bit_width(&input), 32);
    }

    #[test]
    #[should_panic]
    fn wrong_output_length_panics() {
        let input = [0u32; 1024];
        let mut out = vec![0u32; 10];
        pack(3, &input, &mut out);
    }

    #[test]
    #[should_panic]
    fn width_too_large_panics() {
        let _ = packed_words::<u8>(9);
    }

    /// Throughput report; run by hand:
    /// `rustc --edition 2021 -O --test bitpack.rs -o /tmp/b && /tmp/b --ignored --nocapture`
    #[test]
    #[ignore]
    fn bench_unpack_throughput() {
        fn run<T>(widths: &[usize])
        where
            T: BitPackWord + TryFrom<u64>,
            <T as TryFrom<u64>>::Error: Debug,
        {
            use std::hint::black_box;
            use std::time::Instant;
            let mut rng = XorShift(42);
            for &w in widths {
                let input: [T; 1024] = std::array::from_fn(|_| T::try_from(rng.next() & mask64(w)).unwrap());
                let mut packed = vec![T::ZERO; packed_words::<T>(w)];
                pack(w, &input, &mut packed);
                let mut bytes = Vec::new();
                pack_to_le_bytes(w, &input, &mut bytes);
                bytes.insert(0, 0); // misalign
                let mut out = [T::ZERO; 1024];
                let iters = 200_000usize;
                let mut best = [f64::MAX; 3];
                for _ in 0..3 {
                    let t = Instant::now();
                    for _ in 0..iters {
                        unpack(w, black_box(&packed[..]), black_box(&mut out));
                    }
                    best[0] = best[0].min(t.elapsed().as_secs_f64());
                    let t = Instant::now();
                    for _ in 0..iters {
                        unpack_le_bytes(w, black_box(&bytes[1..]), black_box(&mut out));
                    }
                    best[1] = best[1].min(t.elapsed().as_secs_f64());
                    let t = Instant::now();
                    for _ in 0..iters {
                        pack(w, black_box(&input), black_box(&mut packed[..]));
                    }
                    best[2] = best[2].min(t.elapsed().as_secs_f64());
                }
                let n = (iters * 1024) as f64;
                println!(
                    "u{:<2} W={:<2}  unpack {:6.2} Gv/s  unpack_le_bytes(unaligned) {:6.2} Gv/s  pack {:6.2} Gv/s",
                    T::BITS,
                    w,
                    n / best[0] / 1e9,
                    n / best[1] / 1e9,
                    n / best[2] / 1e9
                );
            }
        }
        run::<u8>(&[1, 3, 7, 8]);
        run::<u16>(&[1, 5, 9, 16]);
        run::<u32>(&[1, 3, 9, 17, 32]);
        run::<u64>(&[1, 9, 33, 64]);
    }
}
