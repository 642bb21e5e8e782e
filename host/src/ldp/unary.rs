//! Bit-sliced column counters for unary-encoded reports (SUE, OUE).
//!
//! A unary report's payload is a `d`-bit vector; aggregation adds it to `d`
//! per-item counts. Incrementing one counter per set bit costs a branch and a
//! memory update per bit (≈ 275 per OUE report at d = 1024, ε = 1).
//! [`UnaryCounter`] instead keeps the counts *vertically*: for every 64-column
//! word it holds bit planes (`ones`, `twos`, `fours`, `eights`, `sixteens`, then
//! [`HIGH_PLANES`] planes counting blocks of 32 reports), so adding a report
//! costs a handful of word-wide logic operations per 64 columns and no per-bit
//! work:
//!
//! * reports are taken in blocks of [`BLOCK`] = 32, their payload words read in
//!   place from the report bytes (little-endian; bytes past the payload read as
//!   zero);
//! * a block is added to the planes with a Harley–Seal carry-save adder tree
//!   (31 full adders per 32 inputs; Harley & Seal 1959, Muła, Kurz & Lemire 2018),
//!   whose "thirty-twos" output ripples into the high planes;
//! * before the high planes can overflow (every `32·(2^HIGH_PLANES − 1)`
//!   reports) and at [`UnaryCounter::flush`], every column's small counter is read
//!   out of the planes and added to the caller's `u64` counts.
//!
//! All operations are on `[u64; LANES]` arrays with fixed-size loops, which the
//! compiler turns into SIMD instructions on any target (no `unsafe`, no
//! intrinsics). The result is exactly the sum of the reports' bit vectors: the
//! same integers as counting bit by bit.

use std::array;

/// Reports per carry-save block.
pub const BLOCK: usize = 32;
/// Planes of the per-column block counters: each column counts up to
/// `2^HIGH_PLANES − 1` blocks between flushes.
pub const HIGH_PLANES: usize = 8;
/// Blocks added before the planes are flushed.
const BLOCKS_PER_FLUSH: u32 = (1 << HIGH_PLANES) - 1;
/// Low planes: weights 1, 2, 4, 8, 16 (the carry-save state within a block).
const LOW_PLANES: usize = 5;
/// Planes per group of columns.
const PLANES: usize = LOW_PLANES + HIGH_PLANES;
/// 64-bit words processed together (one vector group).
const LANES: usize = 8;
/// Columns per vector group.
const GROUP_COLUMNS: usize = 64 * LANES;
/// Payload bytes per vector group.
const GROUP_BYTES: usize = 8 * LANES;

/// A group of `LANES` words: `64·LANES` columns of one bit plane.
type V = [u64; LANES];

const ZERO: V = [0; LANES];

#[inline(always)]
fn xor(a: V, b: V) -> V {
    array::from_fn(|i| a[i] ^ b[i])
}

#[inline(always)]
fn and(a: V, b: V) -> V {
    array::from_fn(|i| a[i] & b[i])
}

#[inline(always)]
fn or(a: V, b: V) -> V {
    array::from_fn(|i| a[i] | b[i])
}

/// Carry-save (full) adder, column by column: returns `(carry, sum)` with
/// `a + b + c = 2·carry + sum`.
#[inline(always)]
fn csa(a: V, b: V, c: V) -> (V, V) {
    let u = xor(a, b);
    (or(and(a, b), and(u, c)), xor(u, c))
}

/// The words of one group of payload bytes.
#[inline(always)]
fn words(bytes: &[u8; GROUP_BYTES]) -> V {
    array::from_fn(|i| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    })
}

/// Reads one whole group of words from a payload at byte offset `at` (zero if the
/// payload is too short, which callers rule out).
#[inline(always)]
fn load(payload: &[u8], at: usize) -> V {
    const NONE: [u8; GROUP_BYTES] = [0; GROUP_BYTES];
    let bytes = payload
        .get(at..at + GROUP_BYTES)
        .and_then(|s| <&[u8; GROUP_BYTES]>::try_from(s).ok())
        .unwrap_or(&NONE);
    words(bytes)
}

/// Reads the group at byte offset `at`, zero-padded past the payload's end.
fn load_padded(payload: &[u8], at: usize) -> V {
    let mut bytes = [0u8; GROUP_BYTES];
    let tail = payload.get(at..).unwrap_or(&[]);
    let n = tail.len().min(GROUP_BYTES);
    bytes[..n].copy_from_slice(&tail[..n]);
    words(&bytes)
}

/// Adds 16 inputs to the `ones`…`eights` planes (Harley–Seal tree); returns the
/// carry of weight 16.
#[inline(always)]
fn add16(low: &mut [V; LOW_PLANES], x: impl Fn(usize) -> V) -> V {
    let [ones, twos, fours, eights, _] = *low;
    let (twos_a, o) = csa(ones, x(0), x(1));
    let (twos_b, o) = csa(o, x(2), x(3));
    let (fours_a, t) = csa(twos, twos_a, twos_b);
    let (twos_a, o) = csa(o, x(4), x(5));
    let (twos_b, o) = csa(o, x(6), x(7));
    let (fours_b, t) = csa(t, twos_a, twos_b);
    let (eights_a, f) = csa(fours, fours_a, fours_b);
    let (twos_a, o) = csa(o, x(8), x(9));
    let (twos_b, o) = csa(o, x(10), x(11));
    let (fours_a, t) = csa(t, twos_a, twos_b);
    let (twos_a, o) = csa(o, x(12), x(13));
    let (twos_b, o) = csa(o, x(14), x(15));
    let (fours_b, t) = csa(t, twos_a, twos_b);
    let (eights_b, f) = csa(f, fours_a, fours_b);
    let (sixteens, e) = csa(eights, eights_a, eights_b);
    low[0] = o;
    low[1] = t;
    low[2] = f;
    low[3] = e;
    sixteens
}

/// Adds one block of 32 inputs to a group's planes: two 16-input trees, their
/// weight-16 carries into `sixteens`, and the weight-32 carry rippled into the
/// high planes (half adders).
#[inline(always)]
fn add32(planes: &mut [V; PLANES], x: impl Fn(usize) -> V) {
    let mut low: [V; LOW_PLANES] = array::from_fn(|b| planes[b]);
    let sixteens_a = add16(&mut low, &x);
    let sixteens_b = add16(&mut low, |i| x(16 + i));
    let (mut carry, s) = csa(low[4], sixteens_a, sixteens_b);
    low[4] = s;
    planes[..LOW_PLANES].copy_from_slice(&low);
    for p in planes.iter_mut().skip(LOW_PLANES) {
        let next = and(*p, carry);
        *p = xor(*p, carry);
        carry = next;
    }
}

/// Vertical (bit-sliced) counters for the columns of unary bit vectors.
///
/// Feed payloads with [`push`](UnaryCounter::push) (one at a time, copied) or
/// [`push_block`](UnaryCounter::push_block) ([`BLOCK`] at a time, read in place)
/// and finish with [`flush`](UnaryCounter::flush); the counts passed to all of
/// them must be the same slice. After `flush`, `counts[j]` has grown by the
/// number of pushed payloads with bit `j` set (bit `j` is bit `j % 8` of byte
/// `j / 8`), exactly; columns at or past `counts.len()` are dropped.
///
/// ```
/// use privq_host::ldp::unary::UnaryCounter;
///
/// let mut counts = vec![0u64; 10];
/// let mut acc = UnaryCounter::new(10);
/// for payload in [[0b0000_0101u8, 0b10], [0b0000_0001, 0b11]] {
///     acc.push(&payload, &mut counts);
/// }
/// acc.flush(&mut counts);
/// assert_eq!(counts, [2, 0, 1, 0, 0, 0, 0, 0, 1, 2]);
/// ```
#[derive(Debug, Clone)]
pub struct UnaryCounter {
    /// Columns (`d`).
    columns: usize,
    /// Payload bytes per report: `⌈d / 8⌉`.
    payload_len: usize,
    /// The planes of every group of `64·LANES` columns.
    planes: Vec<[V; PLANES]>,
    /// Blocks added to the high planes since the last flush.
    blocks: u32,
    /// Copies of the payloads given to [`push`](UnaryCounter::push) that do not
    /// fill a block yet, `payload_len` bytes each (allocated at the first `push`).
    pending: Vec<u8>,
    /// Payloads in `pending`.
    filled: usize,
}

impl UnaryCounter {
    /// Counters for `columns` columns (payloads of `⌈columns/8⌉` bytes).
    pub fn new(columns: usize) -> UnaryCounter {
        let payload_len = columns.div_ceil(8);
        UnaryCounter {
            columns,
            payload_len,
            planes: vec![[ZERO; PLANES]; columns.div_ceil(GROUP_COLUMNS)],
            blocks: 0,
            pending: Vec::new(),
            filled: 0,
        }
    }

    /// The number of columns.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// The payload length in bytes that [`push`](UnaryCounter::push) expects.
    pub fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// Adds one payload of `⌈columns/8⌉` bytes. Bits beyond the columns must be
    /// zero (decoding guarantees it) and bytes beyond the payload length are
    /// ignored; a short payload counts as zero-padded. `counts` receives the
    /// columns' counters whenever they are flushed (at the latest at
    /// [`flush`](UnaryCounter::flush)).
    #[inline]
    pub fn push(&mut self, payload: &[u8], counts: &mut [u64]) {
        let len = self.payload_len;
        if self.pending.is_empty() {
            self.pending = vec![0; BLOCK * len];
        }
        let slot = &mut self.pending[self.filled * len..(self.filled + 1) * len];
        let used = payload.len().min(len);
        slot[..used].copy_from_slice(&payload[..used]);
        slot[used..].fill(0);
        self.filled += 1;
        if self.filled == BLOCK {
            self.add_pending(counts);
        }
    }

    /// Adds [`BLOCK`] payloads at once, reading them in place (no copy); the
    /// same as [`BLOCK`] [`push`](UnaryCounter::push) calls.
    #[inline]
    pub fn push_block(&mut self, payloads: &[&[u8]; BLOCK], counts: &mut [u64]) {
        if payloads.iter().all(|p| p.len() == self.payload_len) {
            Self::add_block(&mut self.planes, payloads);
            self.block_added(counts);
        } else {
            for p in payloads {
                self.push(p, counts);
            }
        }
    }

    /// Adds every pending report to `counts` and clears the counter.
    pub fn flush(&mut self, counts: &mut [u64]) {
        if self.filled > 0 {
            self.add_pending(counts);
        }
        self.flush_planes(counts);
    }

    /// Adds the pending copies as one block (zero payloads fill a partial block).
    fn add_pending(&mut self, counts: &mut [u64]) {
        let len = self.payload_len;
        self.pending[self.filled * len..].fill(0);
        self.filled = 0;
        let pending = &self.pending;
        let inputs: [&[u8]; BLOCK] = array::from_fn(|i| &pending[i * len..(i + 1) * len]);
        Self::add_block(&mut self.planes, &inputs);
        self.block_added(counts);
    }

    /// The carry-save kernel: adds one block of payloads (all `payload_len`
    /// bytes long) to the planes, group by group.
    fn add_block(planes: &mut [[V; PLANES]], inputs: &[&[u8]; BLOCK]) {
        let whole = inputs[0].len() / GROUP_BYTES;
        for (k, group) in planes.iter_mut().enumerate() {
            let at = k * GROUP_BYTES;
            if k < whole {
                add32(group, |i| load(inputs[i], at));
            } else {
                add32(group, |i| load_padded(inputs[i], at));
            }
        }
    }

    /// Counts one added block; flushes the planes before the high planes overflow.
    #[inline]
    fn block_added(&mut self, counts: &mut [u64]) {
        self.blocks += 1;
        if self.blocks == BLOCKS_PER_FLUSH {
            self.flush_planes(counts);
        }
    }

    /// Reads every column's counter out of the planes into `counts`, then zeroes
    /// the planes.
    fn flush_planes(&mut self, counts: &mut [u64]) {
        // Word `w` of the columns is lane `w % LANES` of group `w / LANES`.
        for (w, out) in counts.chunks_mut(64).enumerate() {
            let Some(group) = self.planes.get(w / LANES) else {
                break;
            };
            let lane = w % LANES;
            let words: [u64; PLANES] = array::from_fn(|b| group[b][lane]);
            if words.iter().all(|&x| x == 0) {
                continue;
            }
            for (j, c) in out.iter_mut().enumerate() {
                let mut v = 0u64;
                for (b, x) in words.iter().enumerate() {
                    v |= ((x >> j) & 1) << b;
                }
                *c += v;
            }
        }
        self.planes.fill([ZERO; PLANES]);
        self.blocks = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counting bit by bit.
    fn reference(columns: usize, payloads: &[Vec<u8>]) -> Vec<u64> {
        let mut counts = vec![0u64; columns];
        for p in payloads {
            for (j, c) in counts.iter_mut().enumerate() {
                *c += u64::from((p[j / 8] >> (j % 8)) & 1);
            }
        }
        counts
    }

    fn payloads(columns: usize, n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        (0..n)
            .map(|_| {
                let mut p: Vec<u8> = (0..columns.div_ceil(8)).map(|_| next() as u8).collect();
                if !columns.is_multiple_of(8)
                    && let Some(last) = p.last_mut()
                {
                    *last &= (1u8 << (columns % 8)) - 1;
                }
                p
            })
            .collect()
    }

    #[test]
    fn matches_bit_by_bit_counting() {
        for columns in [2, 7, 8, 63, 64, 65, 511, 512, 513, 1000, 1024, 1031] {
            for n in [0, 1, 31, 32, 33, 65, 8159, 8160, 8161, 17000] {
                let ps = payloads(columns, n, (columns * 7919 + n) as u64);
                let mut counts = vec![0u64; columns];
                let mut acc = UnaryCounter::new(columns);
                for p in &ps {
                    acc.push(p, &mut counts);
                }
                acc.flush(&mut counts);
                assert_eq!(counts, reference(columns, &ps), "d={columns} n={n}");
            }
        }
    }

    #[test]
    fn blocks_in_place_and_single_pushes_mix() {
        for columns in [5, 64, 700] {
            let mut ps = payloads(columns, 40 * BLOCK + 7, columns as u64);
            let mut counts = vec![0u64; columns];
            let mut acc = UnaryCounter::new(columns);
            let (mut at, mut round) = (0, 0);
            while ps.len() - at >= BLOCK + 3 {
                round += 1;
                // Three single pushes, then a whole block read in place.
                for p in &ps[at..at + 3] {
                    acc.push(p, &mut counts);
                }
                at += 3;
                if round % 5 == 0 {
                    // A short payload (zero-padded) sends the block down the
                    // copying path.
                    ps[at].pop();
                }
                let block: [&[u8]; BLOCK] = array::from_fn(|i| ps[at + i].as_slice());
                acc.push_block(&block, &mut counts);
                at += BLOCK;
            }
            for p in &ps[at..] {
                acc.push(p, &mut counts);
            }
            acc.flush(&mut counts);
            for p in &mut ps {
                p.resize(columns.div_ceil(8), 0);
            }
            assert_eq!(counts, reference(columns, &ps), "d={columns}");
        }
    }

    #[test]
    fn saturated_columns_cross_many_flushes() {
        let columns = 130;
        let mut counts = vec![5u64; columns];
        let mut acc = UnaryCounter::new(columns);
        let mut all = vec![0xffu8; 17];
        all[16] = 0b11;
        let n = 3 * BLOCK * BLOCKS_PER_FLUSH as usize + 21;
        for _ in 0..n {
            acc.push(&all, &mut counts);
        }
        acc.flush(&mut counts);
        assert!(counts.iter().all(|&c| c == 5 + n as u64));
        // Flushing again adds nothing; the counter is reusable.
        acc.flush(&mut counts);
        acc.push(&all, &mut counts);
        acc.flush(&mut counts);
        assert!(counts.iter().all(|&c| c == 6 + n as u64));
    }
}
