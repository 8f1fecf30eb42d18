//! FSST (Fast Static Symbol Table) string compression in the byte layout Lance uses.
//!
//! # How FSST works
//! FSST (Boncz, Neumann, Leis, VLDB 2020) replaces frequent substrings of 1..=8 bytes
//! ("symbols") by one-byte codes. A table holds at most 255 symbols (codes 0..=254); code 255
//! is the *escape*: the byte after it is a literal the table does not cover. Decoding is one
//! table lookup per code byte and carries no state from one code to the next, so every string
//! decodes on its own (random access) and fast: copy the symbol's 8-byte slot, advance by its
//! length. Compression is greedy: at each position emit the longest symbol that matches. A
//! symbol of 3+ bytes is found through a hash of its first 3 bytes (one symbol per slot, so no
//! two such symbols share a 3-byte prefix); 1- and 2-byte symbols through direct tables.
//! The table is trained on a ~16 KiB sample in a few rounds. Each round compresses the sample
//! with the current table while counting how often each symbol, and each pair of consecutive
//! symbols, is used; candidates are every used symbol and every concatenation of a used pair
//! (cut to 8 bytes), scored by gain = count × length (× 8 for single bytes, to avoid costly
//! escapes); the best 255 form the next table. Symbol length roughly doubles per round. The
//! table with the best measured gain wins.
//!
//! # Serialised table (always [`SYMBOL_TABLE_SIZE`] = 2312 bytes, zero-filled where unused)
//! ```text
//! 0..8          u64 LE header: bits 0-7 n_symbols, 8-15 terminator, 16-23 suffix_lim,
//!               bit 24 encoder_switch, bits 32-63 0x46535354 ("FSST"; "TSSF" on disk)
//! 8..8+8n       symbol i: its bytes, zero padded to 8
//! 8+8n..8+9n    length of symbol i (1..=8)   <- starts right after the n used symbols
//! ```
//! `encoder_switch` 0 means passthrough: the "compressed" strings are the original bytes.
//!
//! # Facts checked in Lance's source (github.com/lancedb/lance, now lance-format/lance)
//! All in `rust/compression/fsst/src/fsst.rs` unless noted; two stored revisions agree.
//! * The decoder (`FsstDecoder::init`, `decompress_bulk`) needs the table to be exactly 2312
//!   bytes and the magic bits set; it reads only n_symbols, encoder_switch, the symbols and
//!   their lengths (newer revisions reject lengths outside 1..=8). `terminator` and
//!   `suffix_lim` are never read, and codes index the table directly, so symbol order is free.
//!   It does not reject codes >= n_symbols (they silently decode to nothing), so an encoder
//!   must never emit one; newer revisions reject an escape whose literal lies outside
//!   the current string. Header and symbols are written with `to_ne_bytes` (little-endian).
//! * `SymbolTable::finalize` orders codes by symbol length 2,3,..,8 then 1, the 2-byte symbols
//!   that prefix a longer symbol first (`suffix_lim` counts them): an encoder speed trick
//!   only. We mirror that order and value for tidiness.
//! * `FsstEncoder::init`/`export`: input under 32 KiB ([`LANCE_MIN_TOTAL_BYTES`]) is written as
//!   passthrough with header n_symbols 0, terminator 0, suffix_lim 0, switch 0, i.e. bytes
//!   `00 00 00 00 54 53 53 46` (= [`SymbolTable::passthrough`]); bytes and offsets are copied.
//! * Framing (`compress_bulk`, `decompress_bulk`): a page's Arrow offsets (n+1 values, the
//!   first may be non-zero) and bytes become n+1 new offsets starting at 0 plus new bytes;
//!   offset i+1 is the end of compressed string i. Strings are compressed independently (no
//!   code or escape spans two strings). The decoder walks `offsets[i]..offsets[i+1]` and its
//!   own output offsets start at 0. `make_sample`/`build_symbol_table`: ~16 KiB sample of
//!   whole strings chosen with an OS-seeded RNG (so Lance's tables are not reproducible),
//!   rounds at sample fractions 8, 38, 68, 98, 108, 128 (/128), minimum count 5·frac/128.
//! * `rust/lance-encoding/src/encodings/physical/fsst.rs`: mini-block FSST wraps a `variable`
//!   encoding of the compressed (offsets, bytes); per chunk (or per value in full-zip) it
//!   decodes into a buffer of 8 × the compressed size, the most a valid stream can expand.
//!
//! # This implementation
//! Our own code from the paper and those facts; std-only, no `unsafe`. Training is
//! deterministic (fixed-seed sampling, weighted by string length, long values in 512-byte
//! pieces); every round runs on the whole sample, and a last pass rebuilds the best table from
//! the symbols it actually used, keeping whichever gains more. Decoding stores each symbol's
//! whole 8-byte slot (four codes per step, one test for escapes); bulk decoding treats up to
//! 16 KiB of consecutive short strings as one stream and reads string ends from a per-code
//! position map, so string boundaries cost no branches. Corrupt input is an error, never a
//! panic or an out-of-bounds access.

#![forbid(unsafe_code)]

use std::fmt;
use std::sync::OnceLock;

/// Size in bytes of a serialised symbol table: 8-byte header, 256 symbol slots of 8 bytes,
/// 256 length slots.
pub const SYMBOL_TABLE_SIZE: usize = 8 + 256 * 8 + 256;
/// Magic stored in bits 32..64 of the header ("FSST").
pub const MAGIC: u32 = 0x4653_5354;
/// The escape code: the next compressed byte is emitted literally.
pub const ESCAPE_CODE: u8 = 255;
/// Most symbols a table holds (codes 0..=254; 255 is the escape).
pub const MAX_SYMBOLS: usize = 255;
/// Longest symbol, in bytes.
pub const MAX_SYMBOL_LEN: usize = 8;
/// Training sample size we aim for (as Lance does): strings are sampled until this is reached.
pub const SAMPLE_TARGET: usize = 16 * 1024;
/// pylance only uses FSST for a page whose string bytes total at least this much.
pub const LANCE_MIN_TOTAL_BYTES: usize = 32 * 1024;
/// pylance only uses FSST when the longest string is at least this long.
pub const LANCE_MIN_MAX_LEN: usize = 5;

const SWITCH_BIT: u64 = 1 << 24;
/// Longest piece of one string that goes into the training sample (long values are sampled
/// in aligned pieces so one huge value cannot dominate the sample).
const SAMPLE_PIECE_MAX: usize = 512;
/// Training rounds, as fractions of 128 (Lance's schedule). Each round uses the whole sample;
/// the fraction sets the minimum count a candidate needs, and the last round counts no pairs.
const ROUND_FRACS: [u32; 6] = [8, 38, 68, 98, 108, 128];
const HASH_BITS: u32 = 12;
const HASH_SIZE: usize = 1 << HASH_BITS;
/// Codes decoded between two output-capacity checks.
const DECODE_WINDOW: usize = 4096;
/// Short strings are decoded in groups of up to this many compressed bytes as one stream,
/// recording where each code's output starts, so string boundaries cost no branches.
const GROUP_BYTES: usize = 16 * 1024;
/// Position-map entry for the literal byte of an escape (never a string boundary).
const MARK_LITERAL: u32 = u32::MAX;
/// Cap on how far ahead of need an output buffer grows in one step.
const GROW_SLACK: usize = 64 * 1024;
/// Training code space: 0..256 are escaped bytes, 256..511 real symbols.
const TRAIN_CODES: usize = 512;

const fn make_masks() -> [u64; 9] {
    let mut m = [0u64; 9];
    let mut i = 1;
    while i < 9 {
        m[i] = if i == 8 { u64::MAX } else { (1u64 << (8 * i)) - 1 };
        i += 1;
    }
    m
}
/// `MASKS[len]` keeps the first `len` bytes of a little-endian word. `MASKS[0] == 0`.
const MASKS: [u64; 9] = make_masks();

/// Hash of the first 3 bytes of a little-endian word, in `0..HASH_SIZE`.
#[inline(always)]
fn hash3(w: u64) -> usize {
    ((w & 0xFF_FFFF).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HASH_BITS)) as usize
}

/// The 8 bytes at `s[i..]` as a little-endian word, zero padded past the end of `s` (callers
/// never let a match extend past the end of the string they work on). Requires `i <= s.len()`.
#[inline(always)]
fn load_word(s: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    if i + 8 <= s.len() {
        b.copy_from_slice(&s[i..i + 8]);
    } else {
        let rest = &s[i..];
        b[..rest.len()].copy_from_slice(rest);
    }
    u64::from_le_bytes(b)
}

// ------------------------------------------------------------------------------------------
// Errors and offsets
// ------------------------------------------------------------------------------------------

/// An FSST failure: a malformed symbol table, corrupt compressed data, bad offsets, or a
/// result that does not fit the offset type. The message says which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsstError(String);

impl FsstError {
    fn new(msg: impl Into<String>) -> Self {
        FsstError(msg.into())
    }

    /// The human-readable reason.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FsstError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FSST: {}", self.0)
    }
}

impl std::error::Error for FsstError {}

/// An Arrow-style offset type (`u32`, `u64`, `i32`, `i64`) for the bulk functions.
pub trait FsstOffset: Copy {
    /// The offset as a byte position; `None` if negative or too large for `usize`.
    fn to_usize(self) -> Option<usize>;
    /// A byte position as an offset; `None` if it does not fit.
    fn from_usize(v: usize) -> Option<Self>;
}

macro_rules! impl_fsst_offset {
    ($($t:ty),*) => {$(
        impl FsstOffset for $t {
            #[inline(always)]
            fn to_usize(self) -> Option<usize> {
                usize::try_from(self).ok()
            }
            #[inline(always)]
            fn from_usize(v: usize) -> Option<Self> {
                <$t>::try_from(v).ok()
            }
        }
    )*};
}
impl_fsst_offset!(u32, u64, i32, i64);

/// An offset as a position, with unrepresentable values mapped to `usize::MAX`, which every
/// bounds check below rejects (no buffer is that long).
#[inline(always)]
fn pos_of<O: FsstOffset>(o: O) -> usize {
    o.to_usize().unwrap_or(usize::MAX)
}

/// Checks that `offsets` is non-decreasing and within `data_len`.
fn validate_offsets<O: FsstOffset>(offsets: &[O], data_len: usize) -> Result<(), FsstError> {
    let mut prev = 0usize;
    for (k, &o) in offsets.iter().enumerate() {
        let p = pos_of(o);
        if p > data_len {
            return Err(FsstError::new(format!("offset {k} is negative or beyond the {data_len}-byte data buffer")));
        }
        if k > 0 && p < prev {
            return Err(FsstError::new(format!("offset {k} ({p}) is less than offset {} ({prev})", k - 1)));
        }
        prev = p;
    }
    Ok(())
}

fn bad_offset(k: usize, data_len: usize) -> FsstError {
    FsstError::new(format!("offset {k} is below its predecessor, negative or beyond the {data_len}-byte data buffer"))
}

fn offset_overflow() -> FsstError {
    FsstError::new("output size does not fit in the offset type")
}

// ------------------------------------------------------------------------------------------
// Symbol table
// ------------------------------------------------------------------------------------------

/// An FSST symbol table: what the 2312-byte `Fsst.symbol_table` field holds.
///
/// Immutable once built. Decoding needs only the symbols; the structures for compressing are
/// built on first use (about 200 KiB, a few tens of microseconds) and cached. `Send + Sync`.
pub struct SymbolTable {
    n_symbols: usize,
    encoder_switch: bool,
    terminator: u8,
    suffix_lim: u8,
    /// Symbol bytes, zero padded; all zero for codes >= n_symbols.
    symbols: [[u8; 8]; 256],
    /// Symbol lengths 1..=8 for codes < n_symbols, 0 for the rest (including 255, the escape).
    lens: [u8; 256],
    /// Decoder form of `lens`: length − 1 for symbol codes, [`NOT_A_SYMBOL`] for the rest, so
    /// one test checks four codes and `(d & 7) + 1` is a length the compiler knows is 1..=8.
    dec_lens: [u8; 256],
    encoder: OnceLock<Box<Encoder>>,
}

/// `dec_lens` entry of the escape and of codes >= n_symbols.
const NOT_A_SYMBOL: u8 = 0x80;

impl SymbolTable {
    /// Builds a table from validated parts: at most 255 symbols, lengths 1..=8.
    fn from_parts(syms: &[(u64, u8)], terminator: u8, suffix_lim: u8, encoder_switch: bool) -> Self {
        debug_assert!(syms.len() <= MAX_SYMBOLS);
        let mut symbols = [[0u8; 8]; 256];
        let mut lens = [0u8; 256];
        let mut dec_lens = [NOT_A_SYMBOL; 256];
        for (i, &(val, len)) in syms.iter().enumerate().take(MAX_SYMBOLS) {
            debug_assert!((1..=8).contains(&len));
            symbols[i] = (val & MASKS[len as usize]).to_le_bytes();
            lens[i] = len;
            dec_lens[i] = len - 1;
        }
        SymbolTable {
            n_symbols: syms.len().min(MAX_SYMBOLS),
            encoder_switch,
            terminator,
            suffix_lim,
            symbols,
            lens,
            dec_lens,
            encoder: OnceLock::new(),
        }
    }

    /// The passthrough table (encoder_switch 0, no symbols): compression copies bytes
    /// unchanged. Serialises to the same bytes pylance writes for input it does not compress.
    pub fn passthrough() -> SymbolTable {
        Self::from_parts(&[], 0, 0, false)
    }

    /// A table with exactly these symbols, code i = `symbols[i]` (encoder_switch 1,
    /// terminator 0, suffix_lim 0). Duplicates are allowed (the encoder uses the first).
    ///
    /// # Errors
    /// More than 255 symbols, or a symbol that is empty or longer than 8 bytes.
    pub fn from_symbols(symbols: &[&[u8]]) -> Result<SymbolTable, FsstError> {
        if symbols.len() > MAX_SYMBOLS {
            return Err(FsstError::new(format!("{} symbols; at most 255 allowed", symbols.len())));
        }
        let mut parts = Vec::with_capacity(symbols.len());
        for (i, s) in symbols.iter().enumerate() {
            if s.is_empty() || s.len() > MAX_SYMBOL_LEN {
                return Err(FsstError::new(format!("symbol {i} has length {}; must be 1..=8", s.len())));
            }
            parts.push((load_word(s, 0), s.len() as u8));
        }
        Ok(Self::from_parts(&parts, 0, 0, true))
    }

    /// Trains a table on `strings` (deterministic: the same input gives the same table).
    ///
    /// Samples about [`SAMPLE_TARGET`] bytes (all of it if the input is smaller), weighting
    /// strings by length and taking pieces of at most 512 bytes from long ones, then runs the
    /// training rounds described in the module docs. The result always has encoder_switch 1;
    /// an input with no bytes gives a table with no symbols (every byte would be escaped).
    /// Deciding whether FSST pays off (e.g. pylance's [`LANCE_MIN_TOTAL_BYTES`] rule, or
    /// comparing sizes) is the caller's job.
    pub fn train(strings: &[&[u8]]) -> SymbolTable {
        let mut ends = Vec::with_capacity(strings.len() + 1);
        ends.push(0usize);
        let mut total = 0usize;
        for s in strings {
            total += s.len();
            ends.push(total);
        }
        let sample = make_sample(strings.len(), |i| ends[i], |i| strings[i]);
        train_on_sample(&sample)
    }

    /// [`SymbolTable::train`] over Arrow-style `offsets` (n+1 values; string i is
    /// `data[offsets[i]..offsets[i+1]]`; the first may be non-zero). Empty `offsets` means no
    /// strings. All offsets are checked (one pass), the sample is drawn as in `train`.
    ///
    /// # Errors
    /// Offsets that decrease, are negative or point past `data`.
    pub fn train_offsets<O: FsstOffset>(offsets: &[O], data: &[u8]) -> Result<SymbolTable, FsstError> {
        validate_offsets(offsets, data.len())?;
        if offsets.len() < 2 {
            return Ok(train_on_sample(&Sample { buf: vec![0; 8], pieces: Vec::new() }));
        }
        let base = pos_of(offsets[0]);
        let n = offsets.len() - 1;
        let sample = make_sample(n, |i| pos_of(offsets[i]) - base, |i| &data[pos_of(offsets[i])..pos_of(offsets[i + 1])]);
        Ok(train_on_sample(&sample))
    }

    /// Serialises to exactly [`SYMBOL_TABLE_SIZE`] bytes (layout in the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; SYMBOL_TABLE_SIZE];
        let n = self.n_symbols;
        let header = ((MAGIC as u64) << 32)
            | if self.encoder_switch { SWITCH_BIT } else { 0 }
            | (self.suffix_lim as u64) << 16
            | (self.terminator as u64) << 8
            | n as u64;
        b[..8].copy_from_slice(&header.to_le_bytes());
        for i in 0..n {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&self.symbols[i]);
        }
        b[8 + 8 * n..8 + 9 * n].copy_from_slice(&self.lens[..n]);
        b
    }

    /// Parses a serialised table. Like pylance, header bits 25..32, symbol bytes past a
    /// symbol's length (they are cleared) and the unused tail are ignored. Never panics.
    ///
    /// # Errors
    /// `b` is not exactly 2312 bytes, bits 32..64 of the header are not the magic, or a used
    /// length is outside 1..=8 (n_symbols ≤ 255 holds by construction: it is one byte).
    pub fn from_bytes(b: &[u8]) -> Result<SymbolTable, FsstError> {
        if b.len() != SYMBOL_TABLE_SIZE {
            return Err(FsstError::new(format!("symbol table is {} bytes; expected {SYMBOL_TABLE_SIZE}", b.len())));
        }
        let mut h = [0u8; 8];
        h.copy_from_slice(&b[..8]);
        let header = u64::from_le_bytes(h);
        if (header >> 32) as u32 != MAGIC {
            return Err(FsstError::new(format!("bad symbol table magic {:#010x}", header >> 32)));
        }
        let n = (header & 0xFF) as usize;
        let mut parts = Vec::with_capacity(n);
        for i in 0..n {
            let len = b[8 + 8 * n + i];
            if !(1..=MAX_SYMBOL_LEN as u8).contains(&len) {
                return Err(FsstError::new(format!("symbol {i} has length {len}; must be 1..=8")));
            }
            parts.push((load_word(&b[8 + 8 * i..16 + 8 * i], 0), len));
        }
        Ok(Self::from_parts(&parts, (header >> 8) as u8, (header >> 16) as u8, header & SWITCH_BIT != 0))
    }

    /// Number of symbols (codes `0..n_symbols` are valid).
    pub fn n_symbols(&self) -> usize {
        self.n_symbols
    }

    /// False for a passthrough table (encoder_switch 0).
    pub fn encoder_switch(&self) -> bool {
        self.encoder_switch
    }

    /// The header's terminator byte (the sample's least frequent byte; informational).
    pub fn terminator(&self) -> u8 {
        self.terminator
    }

    /// The header's suffix_lim (number of leading 2-byte codes that prefix a longer symbol;
    /// informational, no decoder reads it).
    pub fn suffix_lim(&self) -> u8 {
        self.suffix_lim
    }

    /// The bytes of symbol `code`, or `None` if `code >= n_symbols`.
    pub fn symbol(&self, code: usize) -> Option<&[u8]> {
        (code < self.n_symbols).then(|| &self.symbols[code][..self.lens[code] as usize])
    }

    fn encoder(&self) -> &Encoder {
        self.encoder.get_or_init(|| Box::new(Encoder::build(self)))
    }

    /// Appends the compressed form of `s` to `out` (a copy of `s` for a passthrough table).
    ///
    /// Greedy longest match; bytes no symbol covers become escape + literal, so the output
    /// is at most `2 × s.len()` bytes. Only codes `< n_symbols` are emitted and every escape
    /// is followed by its literal, so the result decodes with any FSST decoder, pylance's
    /// included, as a single string.
    pub fn compress_into(&self, s: &[u8], out: &mut Vec<u8>) {
        if !self.encoder_switch {
            out.extend_from_slice(s);
            return;
        }
        let base = out.len();
        out.resize(base + 2 * s.len(), 0);
        let end = compress_run(self.encoder(), s, 0, s.len(), out, base);
        out.truncate(end);
    }

    /// [`SymbolTable::compress_into`] into a new vector.
    pub fn compress(&self, s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.compress_into(s, &mut out);
        out
    }

    /// Appends the decoded form of one compressed string `c` to `out`. For a passthrough
    /// table `c` is copied. Never reads or writes out of bounds; `out` grows by at most
    /// `8 × c.len()` bytes.
    ///
    /// # Errors
    /// A code `>= n_symbols`, or an escape at the end of `c`; `out` is then left as it was.
    pub fn decompress_into(&self, c: &[u8], out: &mut Vec<u8>) -> Result<(), FsstError> {
        if !self.encoder_switch {
            out.extend_from_slice(c);
            return Ok(());
        }
        let base = out.len();
        match self.decode_string(c, out, base) {
            Ok(end) => {
                out.truncate(end);
                Ok(())
            }
            Err(at) => {
                out.truncate(base);
                Err(self.code_error(c, at))
            }
        }
    }

    /// [`SymbolTable::decompress_into`] into a new vector.
    ///
    /// # Errors
    /// As [`SymbolTable::decompress_into`].
    pub fn decompress(&self, c: &[u8]) -> Result<Vec<u8>, FsstError> {
        let mut out = Vec::new();
        self.decompress_into(c, &mut out)?;
        Ok(out)
    }

    /// Compresses the strings of an Arrow-style (offsets, data) pair, Lance's framing.
    ///
    /// `offsets` holds n+1 non-decreasing positions into `data` (the first may be non-zero);
    /// string i is `data[offsets[i]..offsets[i+1]]`. Returns n+1 new offsets starting at 0 into
    /// the returned bytes, each string compressed on its own. Empty `offsets` gives empty
    /// results.
    ///
    /// # Errors
    /// Offsets that decrease, are negative or point past `data`; output too large for `O`
    /// (it can be up to twice the input).
    pub fn compress_offsets<O: FsstOffset>(&self, offsets: &[O], data: &[u8]) -> Result<(Vec<O>, Vec<u8>), FsstError> {
        let (mut out_offsets, mut out) = (Vec::with_capacity(offsets.len()), Vec::new());
        if !offsets.is_empty() {
            out_offsets.push(O::from_usize(0).ok_or_else(offset_overflow)?);
            self.compress_offsets_into(offsets, data, &mut out_offsets, &mut out)?;
        }
        Ok((out_offsets, out))
    }

    /// Appending form of [`SymbolTable::compress_offsets`]: compresses each string onto the end
    /// of `out` and pushes its end position (`out.len()` afterwards) onto `out_offsets`; no
    /// start offset is pushed, so chunks can be appended one after another to an
    /// `out_offsets` that begins `[0]`.
    ///
    /// # Errors
    /// As [`SymbolTable::compress_offsets`]; both vectors are then left as they were.
    pub fn compress_offsets_into<O: FsstOffset>(
        &self,
        offsets: &[O],
        data: &[u8],
        out_offsets: &mut Vec<O>,
        out: &mut Vec<u8>,
    ) -> Result<(), FsstError> {
        validate_offsets(offsets, data.len())?;
        let (n_offsets, n_out) = (out_offsets.len(), out.len());
        let result = self.compress_offsets_inner(offsets, data, out_offsets, out);
        if result.is_err() {
            out_offsets.truncate(n_offsets);
            out.truncate(n_out);
        }
        result
    }

    fn compress_offsets_inner<O: FsstOffset>(
        &self,
        offsets: &[O],
        data: &[u8],
        out_offsets: &mut Vec<O>,
        out: &mut Vec<u8>,
    ) -> Result<(), FsstError> {
        let Some((&first, rest)) = offsets.split_first() else {
            return Ok(());
        };
        out_offsets.reserve(rest.len());
        let mut start = pos_of(first);
        if !self.encoder_switch {
            let base = out.len();
            let last = offsets.last().map_or(start, |&o| pos_of(o));
            out.extend_from_slice(&data[start..last]);
            for &o in rest {
                let end = base + (pos_of(o) - start);
                out_offsets.push(O::from_usize(end).ok_or_else(offset_overflow)?);
            }
            return Ok(());
        }
        let enc = self.encoder();
        let mut o = out.len();
        for &x in rest {
            let end = pos_of(x);
            grow_to(out, o + 2 * (end - start));
            o = compress_run(enc, data, start, end, out, o);
            out_offsets.push(O::from_usize(o).ok_or_else(offset_overflow)?);
            start = end;
        }
        out.truncate(o);
        Ok(())
    }

    /// Decompresses Lance-framed (offsets, bytes): `offsets` holds n+1 non-decreasing
    /// positions into `data` (the first may be non-zero). Returns n+1 offsets starting at 0
    /// and the decoded bytes (for a passthrough table, a copy with offsets rebased to 0).
    /// Empty `offsets` gives empty results.
    ///
    /// # Errors
    /// Offsets that decrease, are negative or point past `data`; a code `>= n_symbols`; an
    /// escape whose literal byte is not inside the same string; output too large for `O`.
    pub fn decompress_offsets<O: FsstOffset>(&self, offsets: &[O], data: &[u8]) -> Result<(Vec<O>, Vec<u8>), FsstError> {
        let (mut out_offsets, mut out) = (Vec::with_capacity(offsets.len()), Vec::new());
        if !offsets.is_empty() {
            out_offsets.push(O::from_usize(0).ok_or_else(offset_overflow)?);
            self.decompress_offsets_into(offsets, data, &mut out_offsets, &mut out)?;
        }
        Ok((out_offsets, out))
    }

    /// Appending form of [`SymbolTable::decompress_offsets`]: decodes each string onto the end
    /// of `out` and pushes its end position onto `out_offsets` (no start offset is pushed).
    /// This is the read hot path: a page decoder can decode chunk after chunk into one
    /// buffer. Runs of short strings are decoded as one stream (see `GROUP_BYTES`).
    ///
    /// # Errors
    /// As [`SymbolTable::decompress_offsets`]; both vectors are then left as they were.
    pub fn decompress_offsets_into<O: FsstOffset>(
        &self,
        offsets: &[O],
        data: &[u8],
        out_offsets: &mut Vec<O>,
        out: &mut Vec<u8>,
    ) -> Result<(), FsstError> {
        let (n_offsets, n_out) = (out_offsets.len(), out.len());
        let result = self.decompress_offsets_inner(offsets, data, out_offsets, out);
        if result.is_err() {
            out_offsets.truncate(n_offsets);
            out.truncate(n_out);
        }
        result
    }

    fn decompress_offsets_inner<O: FsstOffset>(
        &self,
        offsets: &[O],
        data: &[u8],
        out_offsets: &mut Vec<O>,
        out: &mut Vec<u8>,
    ) -> Result<(), FsstError> {
        let Some((&first, rest)) = offsets.split_first() else {
            return Ok(());
        };
        let mut start = pos_of(first);
        if start > data.len() {
            return Err(FsstError::new("offset 0 is negative or beyond the data buffer"));
        }
        out_offsets.reserve(rest.len());
        if !self.encoder_switch {
            validate_offsets(offsets, data.len())?;
            let base = out.len();
            let last = offsets.last().map_or(start, |&o| pos_of(o));
            out.extend_from_slice(&data[start..last]);
            for &o in rest {
                let end = base + (pos_of(o) - start);
                out_offsets.push(O::from_usize(end).ok_or_else(offset_overflow)?);
            }
            return Ok(());
        }
        let mut pos = out.len();
        let mut marks: Vec<u32> = Vec::new();
        let mut k = 0;
        while k < rest.len() {
            // Strings k..g: as many as fit in GROUP_BYTES of compressed data, at least one.
            // The search assumes sorted offsets; any disorder is caught below.
            let group_start = start;
            let fits = |x: &O| pos_of(*x).wrapping_sub(group_start) <= GROUP_BYTES;
            let g = k + rest[k..].partition_point(fits).max(1);
            let group_end = pos_of(rest[g - 1]);
            // The size bound can only fail for unsorted offsets; it keeps the position map's
            // u32 entries (at most 8 × GROUP_BYTES) from overflowing whatever the search did.
            let oversized = g > k + 1 && group_end.wrapping_sub(group_start) > GROUP_BYTES;
            if group_end < group_start || group_end > data.len() || oversized {
                return Err(bad_offset(g, data.len()));
            }
            let c = &data[group_start..group_end];
            let string_error = |at: usize| {
                // The string holding compressed byte `at` of this group (offsets are sorted
                // here: decoding only starts once they were checked).
                let j = (k..g).find(|&j| pos_of(rest[j]) - group_start > at).unwrap_or(g - 1);
                let from = if j == 0 { pos_of(first) } else { pos_of(rest[j - 1]) } - group_start;
                let end = pos_of(rest[j]) - group_start;
                let e = self.code_error(&c[from..end], at - from);
                FsstError::new(format!("string {j}: {}", e.0))
            };
            if g == k + 1 {
                // A single string (possibly long): no position map needed.
                pos = self.decode_stream::<false>(c, out, pos, &mut []).map_err(string_error)?;
                out_offsets.push(O::from_usize(pos).ok_or_else(offset_overflow)?);
            } else {
                // Check the group's inner offsets before decoding: sorted and inside the group.
                let mut prev = group_start;
                let mut sorted = true;
                for &x in &rest[k..g] {
                    let p = pos_of(x);
                    sorted &= prev <= p && p <= group_end;
                    prev = p;
                }
                if !sorted {
                    let bad = (k..g).find(|&j| {
                        let p = pos_of(rest[j]);
                        let before = if j == k { group_start } else { pos_of(rest[j - 1]) };
                        p < before || p > group_end
                    });
                    return Err(bad_offset(bad.unwrap_or(k) + 1, data.len()));
                }
                marks.clear();
                marks.resize(c.len() + 1, 0);
                let base = pos;
                pos = self.decode_stream::<true>(c, out, pos, &mut marks).map_err(string_error)?;
                // Gather the end of every string from the position map. A boundary on an
                // escape's literal means that escape's literal lies outside its string.
                let before = out_offsets.len();
                let mut literal = false;
                let mut overflow = false;
                out_offsets.extend(rest[k..g].iter().map(|&x| {
                    let m = marks[pos_of(x) - group_start];
                    literal |= m == MARK_LITERAL;
                    let end = O::from_usize(base + m as usize);
                    overflow |= end.is_none();
                    end.unwrap_or(first)
                }));
                if literal {
                    let j = (k..g).find(|&j| marks[pos_of(rest[j]) - group_start] == MARK_LITERAL).unwrap_or(k);
                    out_offsets.truncate(before);
                    return Err(FsstError::new(format!(
                        "string {j}: ends with an escape whose literal byte lies outside the string"
                    )));
                }
                if overflow {
                    return Err(offset_overflow());
                }
            }
            start = group_end;
            k = g;
        }
        out.truncate(pos);
        Ok(())
    }

    fn code_error(&self, c: &[u8], at: usize) -> FsstError {
        match c.get(at) {
            Some(&ESCAPE_CODE) => FsstError::new(format!("escape at byte {at} has no literal byte after it")),
            Some(&code) => FsstError::new(format!("code {code} at byte {at} is not a symbol (table has {})", self.n_symbols)),
            None => FsstError::new(format!("corrupt code at byte {at}")),
        }
    }

    /// Decodes one compressed string `c` into `out` at `pos`; see [`Self::decode_stream`].
    #[inline]
    fn decode_string(&self, c: &[u8], out: &mut Vec<u8>, pos: usize) -> Result<usize, usize> {
        self.decode_stream::<false>(c, out, pos, &mut [])
    }

    /// Decodes the codes `c` into `out` at `pos` and returns the end of the output. `out.len()`
    /// is scratch space that may run past the decoded end (grown with zeros as needed; the
    /// caller truncates). Requires `pos <= out.len()`. With `MARK`, also fills the position
    /// map: `marks[i]` = output offset (from `pos`) where the code at `c[i]` starts,
    /// [`MARK_LITERAL`] for an escape's literal byte, and `marks[c.len()]` = total output;
    /// then `marks.len()` must exceed `c.len()` and the output must stay under 4 GiB (callers
    /// pass at most [`GROUP_BYTES`] of codes). `Err(i)`: `c[i]` is neither a symbol code nor
    /// an escape with its literal.
    // Kept out of line: inlined into the bulk loop it competes for registers and spills.
    #[inline(never)]
    fn decode_stream<const MARK: bool>(
        &self,
        c: &[u8],
        out: &mut Vec<u8>,
        mut pos: usize,
        marks: &mut [u32],
    ) -> Result<usize, usize> {
        let base = pos;
        let mut i = 0;
        while i < c.len() {
            let limit = if c.len() - i > DECODE_WINDOW { i + DECODE_WINDOW } else { c.len() };
            // A code yields at most 8 bytes and each 8-byte store starts at most 8 bytes per
            // earlier code past `pos`, so 8 bytes per code in the window bound every store.
            grow_to(out, pos + 8 * (limit - i));
            let (ni, np) = self.decode_window::<MARK>(c, i, limit, out, pos, marks, base)?;
            i = ni;
            pos = np;
        }
        if MARK {
            marks[c.len()] = (pos - base) as u32;
        }
        Ok(pos)
    }

    /// Decodes codes starting at `c[i]` while `i < limit` (an escape just before `limit` reads
    /// its literal at `limit` if that is inside `c`). Needs `out.len() >= pos + 8·(limit − i)`
    /// for the 8-byte stores to stay in bounds (checked anyway: a violation would panic, never
    /// corrupt memory). Returns the next input and output positions, or the index of a code
    /// that is neither a symbol nor a complete escape. `MARK`: see [`Self::decode_stream`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn decode_window<const MARK: bool>(
        &self,
        c: &[u8],
        mut i: usize,
        limit: usize,
        out: &mut [u8],
        mut pos: usize,
        marks: &mut [u32],
        base: usize,
    ) -> Result<(usize, usize), usize> {
        let window = &c[..limit];
        // An escape just before `limit` leaves `i == limit + 1`: stop before slicing at `i`.
        while i < limit {
            (i, pos) = decode_symbols::<MARK>(&self.dec_lens, &self.symbols, window, i, out, pos, marks, base);
            if i >= limit {
                break;
            }
            // c[i] is not a symbol code: an escape with its literal, or corrupt.
            if c[i] == ESCAPE_CODE && i + 1 < c.len() {
                if MARK {
                    marks[i] = (pos - base) as u32;
                    marks[i + 1] = MARK_LITERAL;
                }
                out[pos] = c[i + 1];
                pos += 1;
                i += 2;
            } else {
                return Err(i);
            }
        }
        Ok((i, pos))
    }
}

/// Decodes symbol codes from `c[i..]` into `out` at `pos` until the end of `c` or a code that
/// is not a symbol (the escape, or a code >= n_symbols); returns where it stopped. Requires
/// `i <= c.len()` (and `c.len() <= marks.len()` with `MARK`). Each code
/// stores a whole 8-byte symbol slot and advances by the symbol length, so
/// `out.len() >= pos + 8·(c.len() − i)` keeps every store in bounds. With `MARK`,
/// `marks[j]` receives the output offset (from `base`) of the code at `c[j]`. `dec_lens` is
/// [`SymbolTable::dec_lens`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn decode_symbols<const MARK: bool>(
    dec_lens: &[u8; 256],
    syms: &[[u8; 8]; 256],
    c: &[u8],
    mut i: usize,
    out: &mut [u8],
    mut pos: usize,
    marks: &mut [u32],
    base: usize,
) -> (usize, usize) {
    // Four codes at a time into a 32-byte window: the offsets are at most 8, 16 and 24, which
    // the compiler sees from the masks, so the four stores need no bounds checks. Returns the
    // output offsets of codes 1, 2, 3 and the block's total, or None if a code is no symbol.
    #[inline(always)]
    fn block(dec_lens: &[u8; 256], syms: &[[u8; 8]; 256], q: &[u8], window: &mut [u8]) -> Option<[usize; 4]> {
        let (d0, d1, d2, d3) =
            (dec_lens[q[0] as usize], dec_lens[q[1] as usize], dec_lens[q[2] as usize], dec_lens[q[3] as usize]);
        if (d0 | d1 | d2 | d3) & NOT_A_SYMBOL != 0 {
            return None;
        }
        let a1 = (d0 & 7) as usize + 1;
        let a2 = a1 + (d1 & 7) as usize + 1;
        let a3 = a2 + (d2 & 7) as usize + 1;
        window[..8].copy_from_slice(&syms[q[0] as usize]);
        window[a1..a1 + 8].copy_from_slice(&syms[q[1] as usize]);
        window[a2..a2 + 8].copy_from_slice(&syms[q[2] as usize]);
        window[a3..a3 + 8].copy_from_slice(&syms[q[3] as usize]);
        Some([a1, a2, a3, a3 + (d3 & 7) as usize + 1])
    }
    if MARK {
        for (q, m) in c[i..].chunks_exact(4).zip(marks[i..].chunks_exact_mut(4)) {
            let Some(window) = out.get_mut(pos..pos + 32) else {
                break;
            };
            let Some([a1, a2, a3, end]) = block(dec_lens, syms, q, window) else {
                break;
            };
            let p = (pos - base) as u32;
            m.copy_from_slice(&[p, p + a1 as u32, p + a2 as u32, p + a3 as u32]);
            pos += end;
            i += 4;
        }
    } else {
        for q in c[i..].chunks_exact(4) {
            let Some(window) = out.get_mut(pos..pos + 32) else {
                break;
            };
            let Some([_, _, _, end]) = block(dec_lens, syms, q, window) else {
                break;
            };
            pos += end;
            i += 4;
        }
    }
    while let Some(&code) = c.get(i) {
        let d = dec_lens[code as usize];
        if d & NOT_A_SYMBOL != 0 {
            break;
        }
        if MARK {
            marks[i] = (pos - base) as u32;
        }
        out[pos..pos + 8].copy_from_slice(&syms[code as usize]);
        pos += (d & 7) as usize + 1;
        i += 1;
    }
    (i, pos)
}

impl Clone for SymbolTable {
    fn clone(&self) -> Self {
        SymbolTable {
            n_symbols: self.n_symbols,
            encoder_switch: self.encoder_switch,
            terminator: self.terminator,
            suffix_lim: self.suffix_lim,
            symbols: self.symbols,
            lens: self.lens,
            dec_lens: self.dec_lens,
            encoder: OnceLock::new(),
        }
    }
}

/// Equal when they serialise to the same bytes.
impl PartialEq for SymbolTable {
    fn eq(&self, other: &Self) -> bool {
        self.n_symbols == other.n_symbols
            && self.encoder_switch == other.encoder_switch
            && self.terminator == other.terminator
            && self.suffix_lim == other.suffix_lim
            && self.symbols == other.symbols
            && self.lens == other.lens
    }
}

impl Eq for SymbolTable {}

impl fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let syms: Vec<String> =
            (0..self.n_symbols).map(|i| self.symbols[i][..self.lens[i] as usize].escape_ascii().to_string()).collect();
        f.debug_struct("SymbolTable")
            .field("n_symbols", &self.n_symbols)
            .field("encoder_switch", &self.encoder_switch)
            .field("terminator", &self.terminator)
            .field("suffix_lim", &self.suffix_lim)
            .field("symbols", &syms)
            .finish()
    }
}

// ------------------------------------------------------------------------------------------
// Compression
// ------------------------------------------------------------------------------------------

/// Entry of the 1- and 2-byte lookup tables: bits 0-7 the byte to emit (a code, or 255 for an
/// escape), bits 8-11 how many input bytes it covers, bit 15 set for an escape (then the
/// input byte follows as a literal).
const ESC_FLAG: u16 = 0x8000;
const ESC_ENTRY: u16 = ESC_FLAG | (1 << 8) | ESCAPE_CODE as u16;

#[derive(Clone, Copy)]
struct EncSlot {
    /// Symbol bytes, zero beyond `len`.
    val: u64,
    len: u8,
    code: u8,
}

/// An empty slot never matches: any word masked with `MASKS[0]` is 0, never `u64::MAX`.
const EMPTY_SLOT: EncSlot = EncSlot { val: u64::MAX, len: 0, code: 0 };

/// Compression lookup structures derived from a [`SymbolTable`].
struct Encoder {
    /// Best match of length <= 2 for every 2-byte prefix (little-endian index).
    short: Box<[u16; 65536]>,
    /// Best match of length 1 for every byte (used when one input byte remains).
    byte: [u16; 256],
    /// Symbols of 3..=8 bytes by hash of their first 3 bytes (first symbol wins a slot;
    /// trained tables never collide, a foreign table may lose a symbol, costing ratio only).
    hash: Box<[EncSlot; HASH_SIZE]>,
}

impl Encoder {
    fn build(t: &SymbolTable) -> Encoder {
        let mut byte = [ESC_ENTRY; 256];
        for code in 0..t.n_symbols {
            if t.lens[code] == 1 {
                let b = t.symbols[code][0] as usize;
                if byte[b] & ESC_FLAG != 0 {
                    byte[b] = code as u16 | (1 << 8);
                }
            }
        }
        let mut short: Box<[u16; 65536]> = boxed_array(0);
        for (p, e) in short.iter_mut().enumerate() {
            *e = byte[p & 0xFF];
        }
        let mut hash: Box<[EncSlot; HASH_SIZE]> = boxed_array(EMPTY_SLOT);
        for code in 0..t.n_symbols {
            let len = t.lens[code];
            let val = u64::from_le_bytes(t.symbols[code]);
            if len == 2 {
                let e = &mut short[(val & 0xFFFF) as usize];
                if (*e >> 8) & 0xF != 2 {
                    *e = code as u16 | (2 << 8);
                }
            } else if len >= 3 {
                let slot = &mut hash[hash3(val)];
                if slot.len == 0 {
                    *slot = EncSlot { val, len, code: code as u8 };
                }
            }
        }
        Encoder { short, byte, hash }
    }
}

/// Greedy FSST compression of `data[i..end]` into `out` starting at `o`; returns the end.
///
/// Needs `out.len() >= o + 2·(end − i)`: every step consumes at least one input byte and
/// writes at most two (the escape literal is stored speculatively at `o + 1` and kept only
/// for an escape). Words are loaded from `data` beyond `end` when it has the bytes, so every
/// candidate match is checked against the bytes left in this string.
#[inline]
fn compress_run(enc: &Encoder, data: &[u8], mut i: usize, end: usize, out: &mut [u8], mut o: usize) -> usize {
    while i < end {
        let rest = end - i;
        let w = load_word(data, i);
        let slot = enc.hash[hash3(w)];
        let len = slot.len as usize;
        out[o + 1] = w as u8;
        if len <= rest && w & MASKS[len] == slot.val {
            out[o] = slot.code;
            o += 1;
            i += len;
        } else {
            let e = if rest >= 2 { enc.short[(w & 0xFFFF) as usize] } else { enc.byte[(w & 0xFF) as usize] };
            out[o] = e as u8;
            o += 1 + (e >> 15) as usize;
            i += ((e >> 8) & 0xF) as usize;
        }
    }
    o
}

/// A heap array of `N` copies of `fill`, built without a large stack temporary. Fixed sizes
/// let the compiler drop bounds checks for masked or shifted indexes.
fn boxed_array<T: Copy, const N: usize>(fill: T) -> Box<[T; N]> {
    match vec![fill; N].into_boxed_slice().try_into() {
        Ok(array) => array,
        Err(_) => unreachable!("a vector of N elements converts to [T; N]"),
    }
}

/// Grows `out` with zeros to at least `need` bytes, by at least min(len, 64 KiB) at a time so
/// the zero-filling stays proportional to the output (capacity grows geometrically).
#[inline]
fn grow_to(out: &mut Vec<u8>, need: usize) {
    if out.len() < need {
        let grown = out.len().saturating_add(out.len().min(GROW_SLACK));
        out.resize(need.max(grown), 0);
    }
}

// ------------------------------------------------------------------------------------------
// Training
// ------------------------------------------------------------------------------------------

/// SplitMix64: a tiny fixed-seed generator so sampling is reproducible.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The training sample: pieces of the input copied into one buffer that ends with 8 zero
/// bytes, so an 8-byte load at any piece position stays in bounds.
struct Sample {
    buf: Vec<u8>,
    /// (start, end) of each piece in `buf`.
    pieces: Vec<(usize, usize)>,
}

/// Picks the training sample from `n` strings, where `start(i)` is the position of string i
/// in their concatenation (non-decreasing, `start(0) == 0`, `start(n)` = total) and `get(i)`
/// its bytes. Everything if the total is at most [`SAMPLE_TARGET`]; otherwise random byte
/// positions (so strings weigh by length), each contributing its string, or the 512-byte
/// aligned piece around it for a longer string, until the target is reached. Positions are
/// drawn in batches and located in sorted order with a galloping search, so each batch is one
/// forward sweep over the offsets (cache friendly on pages with millions of strings); the
/// second batch is sized from the first so one or two sweeps suffice. Pieces are taken in
/// draw order.
fn make_sample<'a>(n: usize, start: impl Fn(usize) -> usize, get: impl Fn(usize) -> &'a [u8]) -> Sample {
    const FIRST_BATCH: usize = 256;
    const MAX_BATCH: usize = 1 << 16;
    let total = start(n);
    let mut buf = Vec::with_capacity(total.min(SAMPLE_TARGET + SAMPLE_PIECE_MAX) + 8);
    let mut pieces = Vec::new();
    if total <= SAMPLE_TARGET {
        for i in 0..n {
            let s = get(i);
            if !s.is_empty() {
                pieces.push((buf.len(), buf.len() + s.len()));
                buf.extend_from_slice(s);
            }
        }
    } else {
        let mut rng = SplitMix64(0x4653_5354_5EED_0001);
        let mut batch = FIRST_BATCH;
        let mut draws: Vec<(usize, usize)> = Vec::new(); // (position, draw number)
        let mut found: Vec<(usize, usize)> = Vec::new(); // by draw number: (string, position)
        while buf.len() < SAMPLE_TARGET {
            draws.clear();
            draws.extend((0..batch).map(|j| ((rng.next_u64() % total as u64) as usize, j)));
            found.clear();
            found.resize(batch, (0, 0));
            draws.sort_unstable();
            let mut lo = 0; // start(lo) <= every position still to locate
            for &(pos, j) in draws.iter() {
                let mut step = 1;
                let mut hi = lo + 1;
                while hi < n && start(hi) <= pos {
                    lo = hi;
                    hi = lo + step;
                    step *= 2;
                }
                let mut hi = hi.min(n);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if start(mid) <= pos {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                // start(lo) <= pos < start(lo + 1): string lo holds `pos` (so it is not empty).
                found[j] = (lo, pos);
            }
            for &(i, pos) in found.iter() {
                if buf.len() >= SAMPLE_TARGET {
                    break;
                }
                let s = get(i);
                let piece = if s.len() <= SAMPLE_PIECE_MAX {
                    s
                } else {
                    let from = (pos - start(i)) / SAMPLE_PIECE_MAX * SAMPLE_PIECE_MAX;
                    &s[from..(from + SAMPLE_PIECE_MAX).min(s.len())]
                };
                pieces.push((buf.len(), buf.len() + piece.len()));
                buf.extend_from_slice(piece);
            }
            // Enough draws for the rest at the average piece length so far, plus a margin.
            let average = (buf.len() / pieces.len().max(1)).max(1);
            batch = (SAMPLE_TARGET.saturating_sub(buf.len()) / average * 5 / 4 + 16).min(MAX_BATCH);
        }
    }
    buf.extend_from_slice(&[0u8; 8]);
    Sample { buf, pieces }
}

/// A table under construction. Codes 0..256 stand for escaped bytes, 256 + k for symbol k.
#[derive(Clone)]
struct TrainTable {
    syms: Vec<(u64, u8)>,
    /// Code for each single byte: a 1-byte symbol's code, else the byte itself (escape).
    byte: [u16; 256],
    /// k + 1 for the 2-byte symbol k with this little-endian prefix, 0 if none.
    short: Box<[u8; 65536]>,
    /// k + 1 for the 3+-byte symbol k in this `hash3` slot, 0 if none.
    hash: Box<[u8; HASH_SIZE]>,
}

impl TrainTable {
    fn new() -> Self {
        let mut byte = [0u16; 256];
        for (b, e) in byte.iter_mut().enumerate() {
            *e = b as u16;
        }
        TrainTable { syms: Vec::new(), byte, short: boxed_array(0), hash: boxed_array(0) }
    }

    #[inline]
    fn sym(&self, code: usize) -> (u64, u8) {
        if code < 256 {
            (code as u64, 1)
        } else {
            self.syms[code - 256]
        }
    }

    /// Adds a symbol unless the table is full or its lookup slot is taken.
    fn try_add(&mut self, val: u64, len: u8) -> bool {
        let k = self.syms.len();
        if k >= MAX_SYMBOLS {
            return false;
        }
        match len {
            1 => {
                let e = &mut self.byte[(val & 0xFF) as usize];
                if *e >= 256 {
                    return false;
                }
                *e = (256 + k) as u16;
            }
            2 => {
                let e = &mut self.short[(val & 0xFFFF) as usize];
                if *e != 0 {
                    return false;
                }
                *e = (k + 1) as u8;
            }
            _ => {
                let e = &mut self.hash[hash3(val)];
                if *e != 0 {
                    return false;
                }
                *e = (k + 1) as u8;
            }
        }
        self.syms.push((val, len));
        true
    }

    /// Longest match at `buf[i..end]` (`i < end`, `buf` has 8 readable bytes from `i`):
    /// (code, length). Same rule as `compress_run`.
    #[inline]
    fn longest_match(&self, buf: &[u8], i: usize, end: usize) -> (usize, usize) {
        let rest = end - i;
        let w = load_word(buf, i);
        let h = self.hash[hash3(w)] as usize;
        if h != 0 {
            let (val, len) = self.syms[h - 1];
            let len = len as usize;
            if len <= rest && w & MASKS[len] == val {
                return (255 + h, len);
            }
        }
        if rest >= 2 {
            let k = self.short[(w & 0xFFFF) as usize] as usize;
            if k != 0 {
                return (255 + k, 2);
            }
        }
        (self.byte[(w & 0xFF) as usize] as usize, 1)
    }
}

/// Use counts of codes and of consecutive code pairs (sparse reset via `touched`). A pair is
/// counted at most once per sample byte, so u16 cannot overflow for a ~16.5 KiB sample
/// (saturating anyway).
struct Counters {
    single: [u32; TRAIN_CODES],
    pair: Box<[u16; TRAIN_CODES * TRAIN_CODES]>,
    touched: Vec<u32>,
}

impl Counters {
    fn new() -> Self {
        Counters { single: [0; TRAIN_CODES], pair: boxed_array(0), touched: Vec::new() }
    }

    fn clear(&mut self) {
        self.single.iter_mut().for_each(|c| *c = 0);
        for &k in &self.touched {
            self.pair[k as usize] = 0;
        }
        self.touched.clear();
    }

    #[inline]
    fn count_pair(&mut self, a: usize, b: usize) {
        // Codes are < 511; the masks only let the compiler see that.
        let k = (a & (TRAIN_CODES - 1)) * TRAIN_CODES + (b & (TRAIN_CODES - 1));
        let c = &mut self.pair[k];
        if *c == 0 {
            self.touched.push(k as u32);
        }
        *c = c.saturating_add(1);
    }
}

/// Compresses the sample with `t`, counting code uses (and pairs if `pairs`); returns the
/// gain in bytes (symbol of length L saves L−1, an escape costs 1).
fn compress_count(t: &TrainTable, sample: &Sample, c: &mut Counters, pairs: bool) -> i64 {
    let mut gain = 0i64;
    for &(from, end) in &sample.pieces {
        let mut i = from;
        let mut prev = usize::MAX;
        while i < end {
            let (code, len) = t.longest_match(&sample.buf, i, end);
            gain += if code >= 256 { len as i64 - 1 } else { -1 };
            c.single[code & (TRAIN_CODES - 1)] += 1;
            // Also count the single byte at a multi-byte match: keeps 1-byte candidates alive.
            let single = t.byte[sample.buf[i] as usize] as usize;
            if len > 1 {
                c.single[single & (TRAIN_CODES - 1)] += 1;
            }
            if pairs && prev != usize::MAX {
                c.count_pair(prev, code);
                if len > 1 {
                    c.count_pair(prev, single);
                }
            }
            prev = code;
            i += len;
        }
    }
    gain
}

#[derive(Clone, Copy)]
struct Candidate {
    val: u64,
    len: u8,
    gain: u64,
}

/// Builds the next table from `t`'s counts: candidates are the used codes and (if `pairs`)
/// the concatenations of used pairs; the 255 with the highest gain are kept.
fn make_table(t: &TrainTable, c: &Counters, frac: u32, pairs: bool) -> TrainTable {
    let min_count = 5 * frac / 128;
    let mut cands = Vec::with_capacity(512 + if pairs { c.touched.len() } else { 0 });
    for code in 0..256 + t.syms.len() {
        let count = c.single[code];
        if count == 0 || count < min_count {
            continue;
        }
        let (val, len) = t.sym(code);
        let boost = if len == 1 { 8 } else { 1 };
        cands.push(Candidate { val, len, gain: count as u64 * len as u64 * boost });
    }
    if pairs {
        for &k in &c.touched {
            let count = c.pair[k as usize] as u32;
            if count < min_count {
                continue;
            }
            let (a, b) = (k as usize / TRAIN_CODES, k as usize % TRAIN_CODES);
            let (v1, l1) = t.sym(a);
            if l1 as usize == MAX_SYMBOL_LEN {
                continue;
            }
            let (v2, l2) = t.sym(b);
            let len = (l1 + l2).min(MAX_SYMBOL_LEN as u8);
            let val = (v1 | v2 << (8 * l1)) & MASKS[len as usize];
            cands.push(Candidate { val, len, gain: count as u64 * len as u64 });
        }
    }
    let mut merged = merge_candidates(cands);
    // Best first; (val, len) is unique after merging, so this order is total and the result
    // deterministic. Only the head needs full sorting: few candidates lose their slot.
    let by_gain = |a: &Candidate, b: &Candidate| b.gain.cmp(&a.gain).then(b.len.cmp(&a.len)).then(a.val.cmp(&b.val));
    let head = merged.len().min(2 * MAX_SYMBOLS);
    if merged.len() > head {
        merged.select_nth_unstable_by(head - 1, by_gain);
    }
    merged[..head].sort_unstable_by(by_gain);
    let mut next = TrainTable::new();
    let fill = |next: &mut TrainTable, cands: &[Candidate]| {
        for cand in cands {
            if next.syms.len() >= MAX_SYMBOLS {
                break;
            }
            next.try_add(cand.val, cand.len);
        }
    };
    fill(&mut next, &merged[..head]);
    if next.syms.len() < MAX_SYMBOLS && merged.len() > head {
        merged[head..].sort_unstable_by(by_gain);
        fill(&mut next, &merged[head..]);
    }
    next
}

/// Sums the gains of candidates that name the same symbol (open-addressing hash, O(n)).
fn merge_candidates(cands: Vec<Candidate>) -> Vec<Candidate> {
    let bits = (cands.len() * 2).next_power_of_two().max(16).trailing_zeros();
    let mask = (1usize << bits) - 1;
    let mut slots = vec![u32::MAX; 1 << bits];
    let mut merged: Vec<Candidate> = Vec::with_capacity(cands.len());
    for cand in cands {
        let mut h = (cand.val.wrapping_add(cand.len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize;
        loop {
            let slot = slots[h];
            if slot == u32::MAX {
                slots[h] = merged.len() as u32;
                merged.push(cand);
                break;
            }
            let m = &mut merged[slot as usize];
            if m.val == cand.val && m.len == cand.len {
                m.gain += cand.gain;
                break;
            }
            h = (h + 1) & mask;
        }
    }
    merged
}

fn train_on_sample(sample: &Sample) -> SymbolTable {
    let mut histogram = [0u32; 256];
    for &(from, end) in &sample.pieces {
        for &b in &sample.buf[from..end] {
            histogram[b as usize] += 1;
        }
    }
    let terminator = (0..256).min_by_key(|&b| (histogram[b], b)).unwrap_or(0) as u8;
    if sample.pieces.is_empty() {
        return SymbolTable::from_parts(&[], terminator, 0, true);
    }

    let mut counters = Counters::new();
    let mut table = TrainTable::new();
    let mut best = table.clone();
    let mut best_gain = i64::MIN;
    let mut best_single = [0u32; TRAIN_CODES];
    for &frac in ROUND_FRACS.iter() {
        let pairs = frac < 128;
        counters.clear();
        let gain = compress_count(&table, sample, &mut counters, pairs);
        if gain >= best_gain {
            best_gain = gain;
            best = table.clone();
            best_single = counters.single;
        }
        if pairs {
            table = make_table(&table, &counters, frac, true);
        }
    }
    // Final pass: rebuild the best table from what it actually used (drops dead symbols,
    // gives free codes to frequently escaped bytes); keep whichever measures better.
    counters.clear();
    counters.single = best_single;
    let pruned = make_table(&best, &counters, 128, false);
    counters.clear();
    let pruned_gain = compress_count(&pruned, sample, &mut counters, false);
    let chosen = if pruned_gain >= best_gain { &pruned } else { &best };
    finalize(chosen, terminator)
}

/// Orders the codes as Lance's encoder does (2-byte symbols that prefix a longer symbol,
/// other 2-byte symbols, then lengths 3..=8, then 1) and builds the table.
fn finalize(t: &TrainTable, terminator: u8) -> SymbolTable {
    let syms = &t.syms;
    let prefixes_longer = |v: u64| syms.iter().any(|&(v2, l2)| l2 > 2 && v2 & 0xFFFF == v);
    let mut ordered: Vec<(u64, u8)> = syms.iter().copied().filter(|&(v, l)| l == 2 && prefixes_longer(v)).collect();
    let suffix_lim = ordered.len() as u8;
    ordered.extend(syms.iter().copied().filter(|&(v, l)| l == 2 && !prefixes_longer(v)));
    for len in 3..=MAX_SYMBOL_LEN as u8 {
        ordered.extend(syms.iter().copied().filter(|&(_, l)| l == len));
    }
    ordered.extend(syms.iter().copied().filter(|&(_, l)| l == 1));
    SymbolTable::from_parts(&ordered, terminator, suffix_lim, true)
}

// ------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Decoder written directly from the layout, byte by byte, independent of the fast path.
    fn reference_decode(table: &[u8], c: &[u8]) -> Option<Vec<u8>> {
        let header = u64::from_le_bytes(table[..8].try_into().unwrap());
        if header & (1 << 24) == 0 {
            return Some(c.to_vec());
        }
        let n = (header & 0xFF) as usize;
        let mut out = Vec::new();
        let mut i = 0;
        while i < c.len() {
            if c[i] == 255 {
                out.push(*c.get(i + 1)?);
                i += 2;
            } else {
                let code = c[i] as usize;
                if code >= n {
                    return None;
                }
                let len = table[8 + 8 * n + code] as usize;
                out.extend_from_slice(&table[8 + 8 * code..8 + 8 * code + len]);
                i += 1;
            }
        }
        Some(out)
    }

    #[rustfmt::skip]
    const WORDS: &[&str] = &[
        "the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are", "as",
        "with", "his", "they", "at", "be", "this", "have", "from", "or", "one", "had", "by", "word",
        "but", "not", "what", "all", "were", "we", "when", "your", "can", "said", "there", "use",
        "each", "which", "she", "do", "how", "their", "if", "will", "up", "other", "about", "out",
        "many", "then", "them", "these", "so", "some", "her", "would", "make", "like", "him", "into",
        "time", "has", "look", "two", "more", "write", "go", "see", "number", "no", "way", "could",
        "people", "my", "than", "first", "water", "been", "call", "who", "oil", "its", "now", "find",
        "long", "down", "day", "did", "get", "come", "made", "may", "part", "over", "new", "sound",
        "take", "only", "little", "work", "know", "place", "year", "live", "me", "back", "give",
        "most", "very", "after", "thing", "our", "just", "name", "good", "sentence", "man", "think",
        "say", "great", "where", "help", "through", "much", "before", "line", "right", "too",
        "mean", "old", "any", "same", "tell", "boy", "follow", "came", "want", "show", "also",
        "around", "form", "three", "small", "set", "put", "end", "does", "another", "well",
        "large", "must", "big", "even", "such", "because", "turn", "here", "why", "ask", "went",
        "men", "read", "need", "land", "different", "home", "us", "move", "try", "kind", "hand",
        "picture", "again", "change", "off", "play", "spell", "air", "away", "animal", "house",
        "point", "page", "letter", "mother", "answer", "found", "study", "still", "learn",
        "should", "America", "world", "beautiful", "mountain", "photograph", "sunset", "river",
    ];

    /// Zipf-like pick from WORDS.
    fn word(rng: &mut Rng) -> &'static str {
        let a = rng.below(WORDS.len());
        let b = rng.below(WORDS.len());
        WORDS[a.min(b)]
    }

    fn caption(rng: &mut Rng, target: usize) -> String {
        let mut s = String::new();
        while s.len() < target {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(word(rng));
        }
        if let Some(first) = s.get(..1) {
            let upper = first.to_uppercase();
            s.replace_range(..1, &upper);
        }
        s
    }

    fn gen_words(n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut r = Rng(seed);
        (0..n).map(|_| word(&mut r).as_bytes().to_vec()).collect()
    }

    fn gen_captions(n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut r = Rng(seed);
        (0..n)
            .map(|_| {
                let t = 40 + r.below(40);
                caption(&mut r, t).into_bytes()
            })
            .collect()
    }

    fn gen_urls(n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut r = Rng(seed);
        let hosts = [
            "www.example.com",
            "news.ycombinator.com",
            "github.com",
            "en.wikipedia.org",
            "docs.rs",
            "shop.acme.co.uk",
            "cdn.images.net",
        ];
        (0..n)
            .map(|_| {
                let host = hosts[r.below(hosts.len())];
                let scheme = if r.below(10) == 0 { "http" } else { "https" };
                let mut u = format!("{scheme}://{host}/{}/{}", word(&mut r), word(&mut r));
                match r.below(3) {
                    0 => u.push_str(&format!("/{}.html", r.below(100000))),
                    1 => u.push_str(&format!("?id={}&ref={}", r.below(1_000_000), word(&mut r))),
                    _ => u.push_str(&format!("/{}-{}", word(&mut r), word(&mut r))),
                }
                u.into_bytes()
            })
            .collect()
    }

    fn gen_identifiers(n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut r = Rng(seed);
        let prefixes = ["user", "order", "item", "sku", "acct", "txn"];
        (0..n)
            .map(|_| {
                let p = prefixes[r.below(prefixes.len())];
                let s = match r.below(3) {
                    0 => format!("{p}_{:08}", r.below(100_000_000)),
                    1 => format!("{}-{:04}-{:05}", p.to_uppercase(), 2000 + r.below(30), r.below(100000)),
                    _ => format!("{p}:{:x}", r.next() & 0xFFFF_FFFF),
                };
                s.into_bytes()
            })
            .collect()
    }

    fn as_slices(v: &[Vec<u8>]) -> Vec<&[u8]> {
        v.iter().map(|s| s.as_slice()).collect()
    }

    fn to_offsets(v: &[Vec<u8>]) -> (Vec<u32>, Vec<u8>) {
        let mut offsets = vec![0u32];
        let mut data = Vec::new();
        for s in v {
            data.extend_from_slice(s);
            offsets.push(data.len() as u32);
        }
        (offsets, data)
    }

    /// Round-trips `strings` through a table trained on them: single-string and bulk APIs,
    /// u32 and u64 offsets; checks the compressed form with the reference decoder.
    fn round_trip(strings: &[Vec<u8>]) -> SymbolTable {
        let table = SymbolTable::train(&as_slices(strings));
        check_table_invariants(&table);
        let bytes = table.to_bytes();
        assert_eq!(bytes.len(), SYMBOL_TABLE_SIZE);
        assert_eq!(SymbolTable::from_bytes(&bytes).unwrap(), table);
        for s in strings {
            let c = table.compress(s);
            assert!(c.len() <= 2 * s.len());
            assert_eq!(table.decompress(&c).unwrap(), *s);
            assert_eq!(reference_decode(&bytes, &c).unwrap(), *s);
        }
        let (offsets, data) = to_offsets(strings);
        let (co, cd) = table.compress_offsets(&offsets, &data).unwrap();
        assert_eq!(co.len(), offsets.len());
        assert_eq!(co.first().copied(), Some(0));
        assert_eq!(*co.last().unwrap() as usize, cd.len());
        for k in 0..strings.len() {
            let piece = &cd[co[k] as usize..co[k + 1] as usize];
            assert_eq!(reference_decode(&bytes, piece).unwrap(), strings[k], "string {k}");
        }
        let (dof, dd) = table.decompress_offsets(&co, &cd).unwrap();
        assert_eq!(dof, offsets);
        assert_eq!(dd, data);
        let co64: Vec<u64> = co.iter().map(|&o| o as u64).collect();
        let (dof64, dd64) = table.decompress_offsets(&co64, &cd).unwrap();
        assert_eq!(dd64, data);
        assert_eq!(dof64, offsets.iter().map(|&o| o as u64).collect::<Vec<_>>());
        table
    }

    fn check_table_invariants(t: &SymbolTable) {
        assert!(t.n_symbols() <= MAX_SYMBOLS);
        for i in 0..t.n_symbols() {
            let s = t.symbol(i).unwrap();
            assert!((1..=8).contains(&s.len()));
        }
        let b = t.to_bytes();
        let n = t.n_symbols();
        for i in 0..n {
            let len = b[8 + 8 * n + i] as usize;
            assert!(b[8 + 8 * i + len..16 + 8 * i].iter().all(|&x| x == 0), "symbol padding must be zero");
        }
        assert!(b[8 + 9 * n..].iter().all(|&x| x == 0), "unused tail must be zero");
    }

    #[test]
    fn golden_hand_built_table() {
        // Header: n=2, terminator 0, suffix_lim 0, switch 1, magic.
        let mut t = vec![0u8; SYMBOL_TABLE_SIZE];
        t[..8].copy_from_slice(&[2, 0, 0, 1, 0x54, 0x53, 0x53, 0x46]);
        t[8..10].copy_from_slice(b"ab"); // symbol 0
        t[16] = b'c'; // symbol 1
        t[24] = 2; // lengths start at 8 + 8 * 2 = 24
        t[25] = 1;
        let table = SymbolTable::from_bytes(&t).unwrap();
        assert_eq!(table.n_symbols(), 2);
        assert_eq!(table.symbol(0), Some(&b"ab"[..]));
        assert_eq!(table.symbol(1), Some(&b"c"[..]));
        assert_eq!(table.symbol(2), None);
        let codes = [0u8, 1, 255, b'z', 0, 255, 255, 1];
        assert_eq!(table.decompress(&codes).unwrap(), b"abczab\xffc");
        // Serialisation reproduces the hand-written bytes exactly.
        assert_eq!(table.to_bytes(), t);
        assert_eq!(SymbolTable::from_symbols(&[b"ab", b"c"]).unwrap().to_bytes(), t);
        // Our encoder uses the symbols and prefers the longer one.
        assert_eq!(table.compress(b"abcab"), vec![0, 1, 0]);
        assert_eq!(table.compress(b"abx"), vec![0, 255, b'x']);
        assert_eq!(table.compress(b"a"), vec![255, b'a']);
        // Bulk framing: offsets (n+1, starting at 0), strings compressed independently.
        let offsets = [0u32, 3, 3, 5];
        let (co, cd) = table.compress_offsets(&offsets, b"abcab").unwrap();
        assert_eq!(co, vec![0, 2, 2, 3]);
        assert_eq!(cd, vec![0, 1, 0]);
    }

    #[test]
    fn passthrough_table() {
        let t = SymbolTable::passthrough();
        let b = t.to_bytes();
        assert_eq!(b.len(), SYMBOL_TABLE_SIZE);
        assert_eq!(&b[..8], &[0, 0, 0, 0, b'T', b'S', b'S', b'F']);
        assert!(b[8..].iter().all(|&x| x == 0));
        assert_eq!(SymbolTable::from_bytes(&b).unwrap(), t);
        assert!(!t.encoder_switch());
        let s = b"hello \xff world";
        assert_eq!(t.compress(s), s.to_vec());
        assert_eq!(t.decompress(s).unwrap(), s.to_vec());
        // Bulk: offsets starting at non-zero are rebased to 0.
        let offsets = [2u64, 4, 4, 9];
        let data = b"xxabcdefghyy";
        let (co, cd) = t.compress_offsets(&offsets, data).unwrap();
        assert_eq!(co, vec![0, 2, 2, 7]);
        assert_eq!(cd, b"abcdefg".to_vec());
        let (dof, dd) = t.decompress_offsets(&offsets, data).unwrap();
        assert_eq!(dof, vec![0, 2, 2, 7]);
        assert_eq!(dd, b"abcdefg".to_vec());
        assert!(t.decompress_offsets(&[0u32, 5, 3], data).is_err());
    }

    #[test]
    fn empty_inputs() {
        let t = SymbolTable::train(&[]);
        assert!(t.encoder_switch());
        assert_eq!(t.n_symbols(), 0);
        assert_eq!(SymbolTable::from_bytes(&t.to_bytes()).unwrap(), t);
        assert_eq!(t.compress(b""), Vec::<u8>::new());
        assert_eq!(t.decompress(b"").unwrap(), Vec::<u8>::new());
        // No symbols: everything escapes, still round trips.
        assert_eq!(t.compress(b"ab"), vec![255, b'a', 255, b'b']);
        assert_eq!(t.decompress(&[255, b'a', 255, b'b']).unwrap(), b"ab");
        let t2 = SymbolTable::train_offsets::<u32>(&[], &[]).unwrap();
        assert_eq!(t2.n_symbols(), 0);
        let (o, d) = t.compress_offsets::<u32>(&[], &[]).unwrap();
        assert!(o.is_empty() && d.is_empty());
        let (o, d) = t.decompress_offsets::<u32>(&[], &[]).unwrap();
        assert!(o.is_empty() && d.is_empty());
        let (o, d) = t.compress_offsets::<u32>(&[0], &[]).unwrap();
        assert_eq!((o, d), (vec![0], vec![]));
        round_trip(&[vec![], vec![], vec![]]);
        round_trip(&[]);
    }

    #[test]
    fn one_string() {
        round_trip(&[b"hello world, hello world, hello world".to_vec()]);
        round_trip(&[b"x".to_vec()]);
    }

    #[test]
    fn binary_all_byte_values() {
        let mut r = Rng(7);
        let strings: Vec<Vec<u8>> = (0..2000)
            .map(|i| {
                let len = r.below(40);
                (0..len).map(|j| ((i * 31 + j * 7) as u8) ^ (r.next() as u8 & 0x0F)).collect()
            })
            .collect();
        let t = round_trip(&strings);
        let all: Vec<u8> = (0..=255u8).collect();
        let c = t.compress(&all);
        assert_eq!(t.decompress(&c).unwrap(), all);
        // Purely random bytes too (mostly escapes or single-byte codes).
        let random: Vec<Vec<u8>> = (0..300).map(|_| (0..r.below(100)).map(|_| r.next() as u8).collect()).collect();
        round_trip(&random);
        // Strings made only of 0xFF (the escape value as data).
        round_trip(&[vec![255u8; 1000], vec![255u8; 1], vec![0u8; 10]]);
    }

    #[test]
    fn long_strings() {
        let mut r = Rng(11);
        let big = caption(&mut r, 200_000).into_bytes();
        let mut bin = Vec::new();
        while bin.len() < 100_000 {
            bin.extend_from_slice(word(&mut r).as_bytes());
            bin.push(r.next() as u8);
        }
        let t = round_trip(&[big.clone(), b"short".to_vec(), bin]);
        assert!(t.compress(&big).len() < big.len() / 2);
    }

    #[test]
    fn non_ascii_utf8() {
        let samples = [
            "Ελληνικά κείμενα με τόνους",
            "日本語のテキストと漢字",
            "emoji 🎉🚀✨ mixed",
            "Ünïcödé façade naïve café",
            "Русский текст для проверки",
            "עברית וערבית: مرحبا بالعالم",
        ];
        let strings: Vec<Vec<u8>> = (0..3000).map(|i| format!("{} #{i}", samples[i % samples.len()]).into_bytes()).collect();
        round_trip(&strings);
    }

    #[test]
    fn highly_repetitive_text() {
        let strings: Vec<Vec<u8>> = (0..5000).map(|_| b"abababababababababababababababab".to_vec()).collect();
        let t = round_trip(&strings);
        let c = t.compress(&strings[0]);
        assert!(c.len() * 8 <= strings[0].len(), "8-byte symbols expected, got {} bytes", c.len());
        let strings: Vec<Vec<u8>> = (0..5000).map(|i| format!("status=OK code=200 seq={}", i % 10).into_bytes()).collect();
        round_trip(&strings);
    }

    #[test]
    fn text_like_data_compresses() {
        for (name, data) in [
            ("words", gen_words(20_000, 1)),
            ("captions", gen_captions(3_000, 2)),
            ("urls", gen_urls(3_000, 3)),
            ("identifiers", gen_identifiers(5_000, 4)),
        ] {
            let t = round_trip(&data);
            let (o, d) = to_offsets(&data);
            let (_, cd) = t.compress_offsets(&o, &d).unwrap();
            assert!(cd.len() * 10 < d.len() * 9, "{name}: {} -> {}", d.len(), cd.len());
        }
    }

    #[test]
    fn training_is_deterministic() {
        let data = gen_captions(5_000, 9);
        let a = SymbolTable::train(&as_slices(&data));
        let b = SymbolTable::train(&as_slices(&data));
        assert_eq!(a.to_bytes(), b.to_bytes());
        let (o, d) = to_offsets(&data);
        let c = SymbolTable::train_offsets(&o, &d).unwrap();
        assert_eq!(a.to_bytes(), c.to_bytes());
        // Codes are ordered: 2-byte symbols, then 3..=8, then 1.
        let lens: Vec<usize> = (0..c.n_symbols()).map(|i| c.symbol(i).unwrap().len()).collect();
        let rank = |l: usize| if l == 1 { 9 } else { l };
        assert!(lens.windows(2).all(|w| rank(w[0]) <= rank(w[1])), "{lens:?}");
    }

    #[test]
    fn offsets_with_nonzero_start_and_signed_types() {
        let data = gen_words(500, 5);
        let (o, d) = to_offsets(&data);
        let t = SymbolTable::train(&as_slices(&data));
        // Slice in the middle: offsets start at a non-zero value.
        let sub = &o[100..201];
        let (co, cd) = t.compress_offsets(sub, &d).unwrap();
        assert_eq!(co[0], 0);
        let (dof, dd) = t.decompress_offsets(&co, &cd).unwrap();
        assert_eq!(dd, &d[sub[0] as usize..sub[100] as usize]);
        assert_eq!(dof, sub.iter().map(|&x| x - sub[0]).collect::<Vec<_>>());
        // Decoding with a non-zero first offset (a chunk inside a larger buffer).
        let shifted: Vec<i32> = co.iter().map(|&x| x as i32 + 3).collect();
        let mut buf = vec![9u8, 9, 9];
        buf.extend_from_slice(&cd);
        let (dof2, dd2) = t.decompress_offsets(&shifted, &buf).unwrap();
        assert_eq!(dd2, dd);
        assert_eq!(dof2.iter().map(|&x| x as u32).collect::<Vec<_>>(), dof);
        // Appending forms chain chunks into one Arrow array.
        let mut out_o = vec![0u32];
        let mut out_d = Vec::new();
        t.decompress_offsets_into(&co[..51], &cd, &mut out_o, &mut out_d).unwrap();
        t.decompress_offsets_into(&co[50..], &cd, &mut out_o, &mut out_d).unwrap();
        assert_eq!(out_d, dd);
        assert_eq!(out_o, dof);
    }

    #[test]
    fn hostile_tables_are_rejected() {
        let good = SymbolTable::train(&as_slices(&gen_captions(500, 3))).to_bytes();
        assert!(SymbolTable::from_bytes(&good).is_ok());
        assert!(SymbolTable::from_bytes(&good[..SYMBOL_TABLE_SIZE - 1]).is_err());
        assert!(SymbolTable::from_bytes(&[good.clone(), vec![0]].concat()).is_err());
        assert!(SymbolTable::from_bytes(&[]).is_err());
        let mut bad_magic = good.clone();
        bad_magic[7] ^= 1;
        assert!(SymbolTable::from_bytes(&bad_magic).is_err());
        let n = good[0] as usize;
        assert!(n > 0);
        for bad_len in [0u8, 9, 200] {
            let mut t = good.clone();
            t[8 + 8 * n + n / 2] = bad_len;
            let e = SymbolTable::from_bytes(&t).unwrap_err();
            assert!(e.to_string().contains("length"), "{e}");
        }
        // n_symbols = 255 with valid lengths is accepted; code 255 stays the escape.
        let mut full = vec![0u8; SYMBOL_TABLE_SIZE];
        full[..8].copy_from_slice(&[255, 0, 0, 1, 0x54, 0x53, 0x53, 0x46]);
        for i in 0..255 {
            full[8 + 8 * i] = i as u8;
            full[8 + 8 * 255 + i] = 1;
        }
        let t = SymbolTable::from_bytes(&full).unwrap();
        assert_eq!(t.decompress(&[254, 255, 255, 0]).unwrap(), vec![254, 255, 0]);
        let all: Vec<u8> = (0..=255u8).collect();
        assert_eq!(t.decompress(&t.compress(&all)).unwrap(), all);
        // Random tables with the magic: never panic; accepted ones decode like the reference.
        let mut r = Rng(99);
        for _ in 0..300 {
            let mut b: Vec<u8> = (0..SYMBOL_TABLE_SIZE).map(|_| r.next() as u8).collect();
            b[4..8].copy_from_slice(&[0x54, 0x53, 0x53, 0x46]);
            if r.below(2) == 0 {
                let n = b[0] as usize;
                for i in 0..n {
                    b[8 + 8 * n + i] = 1 + (r.next() % 8) as u8;
                }
            }
            if let Ok(t) = SymbolTable::from_bytes(&b) {
                let canon = t.to_bytes();
                for _ in 0..5 {
                    let c: Vec<u8> = (0..r.below(64)).map(|_| r.next() as u8).collect();
                    assert_eq!(t.decompress(&c).ok(), reference_decode(&canon, &c));
                }
                let s: Vec<u8> = (0..r.below(300)).map(|_| r.next() as u8 % 8).collect();
                let c = t.compress(&s);
                assert_eq!(t.decompress(&c).unwrap(), s);
            }
        }
    }

    #[test]
    fn hostile_compressed_data_is_rejected() {
        let t = SymbolTable::from_symbols(&[b"ab", b"c"]).unwrap();
        assert!(t.decompress(&[2]).is_err()); // code >= n_symbols
        assert!(t.decompress(&[0, 1, 254]).is_err());
        assert!(t.decompress(&[255]).is_err()); // dangling escape
        assert!(t.decompress(&[0, 0, 0, 0, 0, 255]).is_err());
        let mut out = b"keep".to_vec();
        assert!(t.decompress_into(&[0, 7], &mut out).is_err());
        assert_eq!(out, b"keep");
        // Bulk: escape whose literal lies in the next string is an error, also mid-group and
        // when the literal is 255 itself.
        assert!(t.decompress_offsets(&[0u32, 1, 2], &[255, b'x']).is_err());
        assert!(t.decompress_offsets(&[0u32, 2, 3, 5], &[0, 255, 255, 1, 1]).is_err());
        assert_eq!(t.decompress_offsets(&[0u32, 3, 3, 5], &[0, 255, 255, 1, 1]).unwrap().1, b"ab\xffcc");
        // Bad offsets.
        assert!(t.decompress_offsets(&[0u32, 3], &[0, 1]).is_err());
        assert!(t.decompress_offsets(&[1u32, 0], &[0, 1]).is_err());
        assert!(t.decompress_offsets(&[5u32], &[0, 1]).is_err());
        assert!(t.decompress_offsets(&[-1i32, 1], &[0, 1]).is_err());
        assert!(t.compress_offsets(&[0i64, -2], b"ab").is_err());
        assert!(t.compress_offsets(&[0u32, 3], b"ab").is_err());
        assert!(t.compress_offsets(&[2u32, 1], b"ab").is_err());
        let mut oo = vec![0u32];
        let mut od = b"x".to_vec();
        assert!(t.decompress_offsets_into(&[0u32, 1, 3, 2], &[0, 0, 0], &mut oo, &mut od).is_err());
        assert_eq!((oo, od), (vec![0], b"x".to_vec()));
        // Fuzz against the reference decoder with a trained table, single and bulk.
        let trained = SymbolTable::train(&as_slices(&gen_urls(2000, 8)));
        let canon = trained.to_bytes();
        let mut r = Rng(5);
        for round in 0..2000 {
            let len = if round % 100 == 0 { 5000 } else { r.below(40) };
            let c: Vec<u8> = (0..len)
                .map(|_| if r.below(20) == 0 { 255 } else { (r.next() % (trained.n_symbols() as u64 + 3)) as u8 })
                .collect();
            assert_eq!(trained.decompress(&c).ok(), reference_decode(&canon, &c));
            let cut = r.below(c.len() + 1);
            let offsets = [0u64, cut as u64, c.len() as u64];
            let expect = reference_decode(&canon, &c[..cut]).zip(reference_decode(&canon, &c[cut..]));
            match trained.decompress_offsets(&offsets, &c) {
                Ok((o, d)) => {
                    let (a, b) = expect.expect("reference rejects what fast path accepted");
                    assert_eq!(o, vec![0, a.len() as u64, (a.len() + b.len()) as u64]);
                    assert_eq!(d, [a, b].concat());
                }
                Err(_) => assert!(expect.is_none()),
            }
        }
    }

    /// An offset type with a tiny range, to test overflow handling without huge buffers.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Tiny(u8);

    impl FsstOffset for Tiny {
        fn to_usize(self) -> Option<usize> {
            Some(self.0 as usize)
        }
        fn from_usize(v: usize) -> Option<Self> {
            u8::try_from(v).ok().map(Tiny)
        }
    }

    #[test]
    fn offset_overflow_is_an_error() {
        let t = SymbolTable::from_symbols(&[b"abcdefgh"]).unwrap();
        // 31 codes expand to 248 bytes: fits; 32 codes to 256: does not.
        let (o, d) = t.decompress_offsets(&[Tiny(0), Tiny(31)], &[0; 31]).unwrap();
        assert_eq!((o, d.len()), (vec![Tiny(0), Tiny(248)], 248));
        assert!(t.decompress_offsets(&[Tiny(0), Tiny(32)], &[0; 32]).is_err());
        // Same in the grouped path (several strings) and when appending.
        assert!(t.decompress_offsets(&[Tiny(0), Tiny(16), Tiny(32)], &[0; 32]).is_err());
        let mut oo = vec![Tiny(0)];
        let mut od = vec![1u8; 200];
        assert!(t.decompress_offsets_into(&[Tiny(0), Tiny(1), Tiny(7)], &[0; 7], &mut oo, &mut od).is_err());
        assert_eq!((oo, od), (vec![Tiny(0)], vec![1u8; 200]));
        // Escapes double the size: 128 uncovered bytes compress to 256 bytes.
        let data = [b'z'; 128];
        assert!(t.compress_offsets(&[Tiny(0), Tiny(128)], &data).is_err());
        let (o, d) = t.compress_offsets(&[Tiny(0), Tiny(127)], &data).unwrap();
        assert_eq!((o, d.len()), (vec![Tiny(0), Tiny(254)], 254));
        // Passthrough copies: output fits whenever the input did.
        let p = SymbolTable::passthrough();
        assert_eq!(p.decompress_offsets(&[Tiny(3), Tiny(255)], &[7; 255]).unwrap().0, vec![Tiny(0), Tiny(252)]);
    }

    #[test]
    fn bulk_fuzz_against_reference() {
        // Many strings, so several groups form; random codes with escapes; offsets sorted or
        // perturbed. Must never panic; accepted input must decode like the reference.
        let trained = SymbolTable::train(&as_slices(&gen_captions(1000, 21)));
        let canon = trained.to_bytes();
        let n = trained.n_symbols() as u64;
        let valid = gen_captions(3000, 22);
        let (vo, vd) = to_offsets(&valid);
        let (valid_offsets, valid_data) = trained.compress_offsets(&vo, &vd).unwrap();
        let mut r = Rng(77);
        let (mut accepted, mut rejected) = (0, 0);
        for round in 0..80 {
            let (mut offsets, data) = if round % 2 == 0 {
                // Valid compressed strings (possibly perturbed below).
                (valid_offsets.clone(), valid_data.clone())
            } else {
                let len = 1 + r.below(60_000);
                let data: Vec<u8> = (0..len)
                    .map(|_| match r.below(50) {
                        0 => 255,
                        1 if round % 3 == 0 => (n + r.below(4) as u64) as u8,
                        _ => (r.next() % n) as u8,
                    })
                    .collect();
                let mut offsets: Vec<u32> = (0..r.below(3000)).map(|_| r.below(len + 1) as u32).collect();
                offsets.push(0);
                offsets.push(len as u32);
                offsets.sort_unstable();
                (offsets, data)
            };
            let len = data.len();
            match round % 8 {
                1 | 2 => {
                    let k = r.below(offsets.len());
                    offsets[k] = r.below(len + 2) as u32; // may break order or bounds
                }
                4 => offsets.reverse(),
                6 => {
                    // Cut a valid string so it ends on an escape whose literal is in the next.
                    let escape_last = |k: usize| offsets[k] >= offsets[k - 1] + 2 && data[offsets[k] as usize - 2] == 255;
                    if let Some(k) = (1..offsets.len() - 1).find(|&k| escape_last(k)) {
                        offsets[k] -= 1;
                    }
                }
                _ => {}
            }
            let expect: Option<Vec<Vec<u8>>> = offsets
                .windows(2)
                .map(|w| {
                    if w[0] > w[1] || w[1] as usize > len {
                        None
                    } else {
                        reference_decode(&canon, &data[w[0] as usize..w[1] as usize])
                    }
                })
                .collect();
            match trained.decompress_offsets(&offsets, &data) {
                Ok((o, d)) => {
                    accepted += 1;
                    let expect = expect.expect("fast path accepted what the reference rejects");
                    assert_eq!(o.len(), offsets.len());
                    for (k, e) in expect.iter().enumerate() {
                        assert_eq!(&d[o[k] as usize..o[k + 1] as usize], e.as_slice(), "round {round} string {k}");
                    }
                }
                Err(_) => {
                    rejected += 1;
                    assert!(expect.is_none(), "round {round}: fast path rejected valid input");
                }
            }
        }
        assert!(accepted >= 10 && rejected >= 10, "accepted {accepted}, rejected {rejected}");
    }

    #[test]
    fn from_bytes_is_lenient_where_pylance_is() {
        let t = SymbolTable::from_symbols(&[b"ab", b"cde"]).unwrap();
        let mut b = t.to_bytes();
        b[3] |= 0xFE; // header bits 25..32: ignored
        b[8 + 2] = 0xAA; // bytes past symbol 0's length: cleared
        b[SYMBOL_TABLE_SIZE - 1] = 7; // unused tail: ignored
        let u = SymbolTable::from_bytes(&b).unwrap();
        assert_eq!(u, t);
        assert_eq!(u.to_bytes(), t.to_bytes());
        assert_eq!(u.decompress(&[0, 1]).unwrap(), b"abcde");
    }

    /// Timings and ratios; run by hand:
    /// rustc --edition 2021 -O --test fsst.rs -o /tmp/fsst_test && /tmp/fsst_test --ignored --nocapture
    #[test]
    #[ignore = "benchmark: prints ratios and speeds, run by hand with -O"]
    fn bench_report() {
        use std::hint::black_box;
        use std::time::Instant;
        let mut datasets: Vec<(String, Vec<Vec<u8>>)> = vec![
            ("english words".into(), gen_words(400_000, 1)),
            ("captions ~60B".into(), gen_captions(60_000, 2)),
            ("urls".into(), gen_urls(80_000, 3)),
            ("identifiers ~14B".into(), gen_identifiers(250_000, 4)),
        ];
        for path in ["/work/shared/spec/FORMAT.md", "/usr/share/common-licenses/GPL-3"] {
            if let Ok(text) = std::fs::read_to_string(path) {
                let lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
                let reps: Vec<Vec<u8>> = lines.iter().cycle().take(lines.len() * 8).cloned().collect();
                datasets.push((format!("lines of {} (x8)", path.rsplit('/').next().unwrap_or(path)), reps));
            }
        }
        fn best_of<F: FnMut()>(n: usize, mut f: F) -> f64 {
            (0..n)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::MAX, f64::min)
        }
        println!(
            "{:<40} {:>8} {:>6} {:>8} {:>8} {:>9} {:>9} {:>9} {:>5}",
            "dataset", "raw B", "ratio", "train", "train16K", "compress", "decomp", "dec-into", "nsym"
        );
        for (name, data) in &datasets {
            let (o, d) = to_offsets(data);
            let mut table = SymbolTable::passthrough();
            let train_s = best_of(10, || table = SymbolTable::train_offsets(&o, &d).unwrap());
            let n16 = o.iter().position(|&x| x as usize > SAMPLE_TARGET).unwrap_or(o.len()) - 1;
            let train16_s = best_of(10, || {
                black_box(SymbolTable::train_offsets(&o[..=n16], &d).unwrap());
            });
            let mut co = Vec::new();
            let mut cd = Vec::new();
            let comp_s = best_of(5, || {
                let (a, b) = table.compress_offsets(&o, &d).unwrap();
                co = a;
                cd = b;
            });
            let dec_s = best_of(10, || {
                let r = table.decompress_offsets(black_box(&co), black_box(&cd)).unwrap();
                black_box(r);
            });
            let mut oo: Vec<u32> = Vec::with_capacity(co.len());
            let mut od: Vec<u8> = Vec::with_capacity(d.len() + (1 << 17));
            let into_s = best_of(10, || {
                oo.clear();
                od.clear();
                oo.push(0);
                table.decompress_offsets_into(black_box(&co), black_box(&cd), &mut oo, &mut od).unwrap();
            });
            assert_eq!(od, d);
            let mb = d.len() as f64 / 1e6;
            println!(
                "{:<40} {:>8} {:>6.2} {:>6.2}ms {:>6.2}ms {:>5.0}MB/s {:>5.0}MB/s {:>5.0}MB/s {:>5}",
                name,
                d.len(),
                d.len() as f64 / (cd.len() + SYMBOL_TABLE_SIZE) as f64,
                train_s * 1e3,
                train16_s * 1e3,
                mb / comp_s,
                mb / dec_s,
                mb / into_s,
                table.n_symbols()
            );
        }
        // Single long string decode (window path) throughput.
        let mut r = Rng(3);
        let big = caption(&mut r, 8_000_000).into_bytes();
        let t = SymbolTable::train(&[&big]);
        let c = t.compress(&big);
        let s = best_of(10, || {
            black_box(t.decompress(black_box(&c)).unwrap());
        });
        println!(
            "one 8 MB string: ratio {:.2}, decompress {:.0} MB/s",
            big.len() as f64 / c.len() as f64,
            big.len() as f64 / 1e6 / s
        );
    }
}
