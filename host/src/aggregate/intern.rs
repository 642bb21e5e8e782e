//! Texts numbered in first-seen order: the privacy units of a table being read.
//!
//! An open-addressing table of 32-byte slots, each holding a text's hash, its
//! number and up to [`INLINE`] of its bytes, so finding a short text reads one
//! cache line; longer texts are compared with their copy in one shared buffer.
//! With many units the slots outgrow the caches and every lookup of a shuffled
//! table is a cache miss: [`Interner::warm`] loads the slots of several texts
//! at once (independent loads the processor overlaps) before they are looked up
//! one by one.
//!
//! Numbers are given in first-seen order, so the hash (seeded per process)
//! decides nothing a release depends on.

use std::hash::BuildHasher;

/// The most bytes of a text a slot holds.
const INLINE: usize = 23;

/// The bytes of one slot: the text's hash (bytes 0–3), its number plus one
/// (4–7; 0 for a free slot, so fresh zeroed memory is all free), its length (8,
/// at most 255) and its first [`INLINE`] bytes (9–31). Slots are plain bytes so
/// that they can live in memory mapped for them ([`SlotMemory`]).
type Slot = [u8; 32];

fn word(s: &Slot, at: usize) -> u32 {
    u32::from_ne_bytes([s[at], s[at + 1], s[at + 2], s[at + 3]])
}

fn tag_of(s: &Slot) -> u32 {
    word(s, 0)
}

/// The slot's number plus one (0: free).
fn id1_of(s: &Slot) -> u32 {
    word(s, 4)
}

fn inline_of(s: &Slot) -> &[u8; INLINE] {
    s[9..].try_into().expect("a slot's last INLINE bytes")
}

/// Slots of this many bytes or more get a mapping of their own.
const MAPPED_BYTES: usize = 2 << 20;

/// Zeroed (all free) slots: on the heap while small; from [`MAPPED_BYTES`] on, in
/// an anonymous mapping of their own, which the kernel is asked to back with huge
/// pages (where it does, a lookup in a table of hundreds of MiB misses the TLB far
/// less often; measured in the book, "Huge pages for the units' slots"). A mapping
/// is page-aligned, so no slot straddles two cache lines; if the kernel refuses
/// one, the heap serves.
enum SlotMemory {
    Heap(Vec<Slot>),
    Mapped(memmap2::MmapMut),
}

impl SlotMemory {
    fn zeroed(slots: usize) -> Self {
        let bytes = slots * size_of::<Slot>();
        if bytes >= MAPPED_BYTES
            && let Ok(map) = memmap2::MmapMut::map_anon(bytes)
        {
            // Advice only: without huge pages the table works the same.
            #[cfg(target_os = "linux")]
            let _ = map.advise(memmap2::Advice::HugePage);
            return SlotMemory::Mapped(map);
        }
        SlotMemory::Heap(vec![[0; 32]; slots])
    }

    fn slots(&self) -> &[Slot] {
        match self {
            SlotMemory::Heap(v) => v,
            SlotMemory::Mapped(m) => m.as_chunks().0,
        }
    }

    fn slots_mut(&mut self) -> &mut [Slot] {
        match self {
            SlotMemory::Heap(v) => v,
            SlotMemory::Mapped(m) => m.as_chunks_mut().0,
        }
    }
}

/// Texts by number: all of them in one buffer.
#[derive(Debug, Clone, Default)]
pub(super) struct Names {
    /// The texts, concatenated; text `i` ends at `ends[i]`.
    texts: String,
    ends: Vec<usize>,
}

impl Names {
    /// The number of texts.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Text `id` (empty for an unknown number).
    pub(super) fn text(&self, id: u32) -> &str {
        let id = id as usize;
        let start = match id.checked_sub(1) {
            None => 0,
            Some(p) => self.ends.get(p).copied().unwrap_or(usize::MAX),
        };
        match self.ends.get(id) {
            Some(&end) if start <= end => &self.texts[start..end],
            _ => "",
        }
    }

    /// Adds `text` as the next number's.
    pub(super) fn push(&mut self, text: &str) {
        self.texts.push_str(text);
        self.ends.push(self.texts.len());
    }

    /// The bytes of all the texts.
    pub(super) fn bytes(&self) -> usize {
        self.texts.len()
    }

    /// Removes every text, keeping the buffers for reuse unless the texts' buffer
    /// holds more than `keep` bytes.
    pub(super) fn clear(&mut self, keep: usize) {
        if self.texts.capacity() > keep {
            self.texts = String::new();
        }
        self.texts.clear();
        self.ends.clear();
    }
}

/// The hash an [`Interner`] finds a text by (seeded per process; a copy hashes
/// as the interner it came from, on any thread).
#[derive(Clone, Default)]
pub(super) struct TextHash(foldhash::fast::RandomState);

impl TextHash {
    /// The hash of `text`.
    pub(super) fn of(&self, text: &str) -> u32 {
        self.0.hash_one(text.as_bytes()) as u32
    }
}

/// Texts numbered 0, 1, 2 … in the order first seen.
pub(super) struct Interner {
    memory: SlotMemory,
    /// log2 of the number of slots.
    bits: u32,
    names: Names,
    hash: TextHash,
}

impl Interner {
    /// An empty interner hashing with `hash`.
    pub(super) fn new(hash: TextHash) -> Self {
        Interner {
            memory: SlotMemory::zeroed(16),
            bits: 4,
            names: Names::default(),
            hash,
        }
    }

    /// The number of texts.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// The texts by number.
    pub(super) fn into_names(self) -> Names {
        self.names
    }

    /// The first slot a text of hash `tag` probes.
    fn home(&self, tag: u32) -> usize {
        home(tag, self.bits)
    }

    /// Loads the first slots of the texts of these hashes, so that looking them up
    /// next finds them in the cache.
    pub(super) fn warm(&self, tags: &[u32]) {
        let slots = self.memory.slots();
        let mut seen = 0u32;
        for &t in tags {
            seen ^= tag_of(&slots[self.home(t)]);
        }
        std::hint::black_box(seen);
    }

    /// The number of `text`, given a new one if it was never seen.
    pub(super) fn id(&mut self, text: &str) -> u32 {
        let tag = self.hash.of(text);
        self.id_hashed(text, tag)
    }

    /// [`Interner::id`] of a text whose hash ([`TextHash::of`], of the interner's
    /// own [`TextHash`]) is `tag`.
    pub(super) fn id_hashed(&mut self, text: &str, tag: u32) -> u32 {
        let bytes = text.as_bytes();
        let slots = self.memory.slots();
        let mask = slots.len() - 1;
        let mut i = self.home(tag);
        loop {
            let s = &slots[i];
            let id1 = id1_of(s);
            if id1 == 0 {
                break;
            }
            if tag_of(s) == tag && self.holds(s, id1 - 1, bytes) {
                return id1 - 1;
            }
            i = (i + 1) & mask;
        }
        // New: at most three quarters of the slots in use, so probes stay short (at
        // most 2.5 on average for a text found, mostly in one or two adjacent cache
        // lines) and 10⁷ units take 512 MiB of slots, not 1 GiB (up to 3·2³⁰ texts;
        // past that the 2³² slots fill further, and a table has fewer than 2³² rows,
        // so a number plus one still fits in a `u32`).
        let id = self.names.len() as u32;
        let n = bytes.len().min(INLINE);
        let slot = &mut self.memory.slots_mut()[i];
        slot[0..4].copy_from_slice(&tag.to_ne_bytes());
        slot[4..8].copy_from_slice(&(id + 1).to_ne_bytes());
        slot[8] = bytes.len().min(255) as u8;
        slot[9..9 + n].copy_from_slice(&bytes[..n]);
        self.names.push(text);
        if self.names.len() > (mask + 1) / 4 * 3 && self.bits < 32 {
            self.grow();
        }
        id
    }

    /// True when slot `s`, of text number `id`, holds `bytes`.
    fn holds(&self, s: &Slot, id: u32, bytes: &[u8]) -> bool {
        let inline = inline_of(s);
        if bytes.len() <= INLINE {
            usize::from(s[8]) == bytes.len() && inline_eq(inline, bytes)
        } else {
            inline[..] == bytes[..INLINE] && self.names.text(id).as_bytes() == bytes
        }
    }

    fn grow(&mut self) {
        let old = std::mem::replace(&mut self.memory, SlotMemory::zeroed(2 << self.bits));
        self.bits += 1;
        let bits = self.bits;
        let slots = self.memory.slots_mut();
        let mask = slots.len() - 1;
        for s in old.slots().iter().filter(|s| id1_of(s) != 0) {
            let mut i = home(tag_of(s), bits);
            while id1_of(&slots[i]) != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = *s;
        }
    }
}

/// The first slot a text of hash `tag` probes among `2^bits` (Fibonacci hashing:
/// every bit of the tag counts).
fn home(tag: u32, bits: u32) -> usize {
    (tag.wrapping_mul(0x9E37_79B9) >> (32 - bits)) as usize
}

/// True when `inline` starts with `bytes` (at most [`INLINE`] of them), compared a
/// word at a time: two or three overlapping windows cover every byte, where a
/// slice comparison would call `memcmp` once per lookup.
fn inline_eq(inline: &[u8; INLINE], bytes: &[u8]) -> bool {
    // Three windows of 8 cover at most 24 bytes.
    const _: () = assert!(INLINE <= 24);
    fn word<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
        let mut w = [0u8; N];
        w.copy_from_slice(&s[at..at + N]);
        w
    }
    let n = bytes.len();
    let same = |at: usize, width: usize| match width {
        4 => word::<4>(inline, at) == word::<4>(bytes, at),
        _ => word::<8>(inline, at) == word::<8>(bytes, at),
    };
    match n {
        0 => true,
        1..=3 => {
            inline[0] == bytes[0] && inline[n / 2] == bytes[n / 2] && inline[n - 1] == bytes[n - 1]
        }
        4..=7 => same(0, 4) && same(n - 4, 4),
        8..=16 => same(0, 8) && same(n - 8, 8),
        17..=INLINE => same(0, 8) && same(8, 8) && same(n - 8, 8),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_texts_in_first_seen_order() {
        let mut i = Interner::new(TextHash::default());
        let long = "a unit text longer than twenty-three bytes";
        let longer = "a unit text longer than twenty-three bytes, and then some";
        let texts = ["b", "", "a", long, "b", longer, "a\u{0}", long, "", "a"];
        let ids: Vec<u32> = texts.iter().map(|t| i.id(t)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 0, 4, 5, 3, 1, 2]);
        assert_eq!(i.len(), 6);
        let names = i.into_names();
        for (t, id) in texts.iter().zip(&ids) {
            assert_eq!(names.text(*id), *t);
        }
        assert_eq!(names.text(6), "");
        assert_eq!(names.text(u32::MAX), "");
    }

    /// Every length up to INLINE, and a difference at every position of it.
    #[test]
    fn inline_comparison_reads_every_byte() {
        for n in 0..=INLINE {
            let bytes: Vec<u8> = (0..n as u8).map(|b| b + 1).collect();
            // Padding of zeros (as a slot holds it) and of anything else: only
            // the first n bytes count.
            let mut inline = [0u8; INLINE];
            inline[..n].copy_from_slice(&bytes);
            assert!(inline_eq(&inline, &bytes), "length {n}");
            let mut padded = [0xa5u8; INLINE];
            padded[..n].copy_from_slice(&bytes);
            assert!(inline_eq(&padded, &bytes), "length {n}, padded");
            for at in 0..n {
                let mut other = bytes.clone();
                other[at] ^= 0x80;
                assert!(!inline_eq(&inline, &other), "length {n}, byte {at}");
            }
        }
        assert!(!inline_eq(&[0; INLINE], &[0; INLINE + 1]));
    }

    /// The slots grow once three quarters are in use, never later (probes stay
    /// short) and never much earlier (40 000 texts fit in 2¹⁶ slots).
    #[test]
    fn grows_at_three_quarters() {
        let mut i = Interner::new(TextHash::default());
        for k in 0..40_000u32 {
            assert_eq!(i.id(&format!("t{k}")), k);
            assert!(
                i.len() <= i.memory.slots().len() / 4 * 3,
                "{} texts",
                i.len()
            );
        }
        assert_eq!(i.memory.slots().len(), 1 << 16);
        // 2 MiB of slots: a mapping of their own.
        assert!(matches!(i.memory, SlotMemory::Mapped(_)));
    }

    /// Through many growths, with texts sharing their first 23 bytes and a
    /// deliberately bad hash (every text the same tag): each text keeps its number.
    #[test]
    fn many_texts_and_colliding_hashes() {
        let mut i = Interner::new(TextHash::default());
        let prefix = "x".repeat(INLINE);
        let text = |k: usize| match k % 3 {
            0 => format!("u{k}"),
            1 => format!("{prefix}{k}"),
            _ => format!("{k}"),
        };
        for k in 0..50_000 {
            assert_eq!(i.id(&text(k)), k as u32);
        }
        for k in (0..50_000).rev() {
            assert_eq!(i.id(&text(k)), k as u32);
        }
        let names = i.into_names();
        for k in 0..50_000 {
            assert_eq!(names.text(k as u32), text(k));
        }
        let mut same = Interner::new(TextHash::default());
        for k in 0..500 {
            assert_eq!(same.id_hashed(&text(k), 7), k as u32);
        }
        for k in 0..500 {
            same.warm(&[7, 7]);
            assert_eq!(same.id_hashed(&text(k), 7), k as u32);
        }
    }
}
