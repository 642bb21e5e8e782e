//! Per-call work of the discrete Laplace samplers, for instruction counting under
//! `valgrind --tool=callgrind` (driven by `tools/sampler-cost.sh`).
//!
//! ```text
//! sampler_cost [CALLS] [SCALE...]      (defaults: 400 calls, scales 1 10 1000)
//! ```
//!
//! For every scale it makes `CALLS` calls to each sampler, each through its own
//! `#[inline(never)]` wrapper — [`cost_probe_bounded`] and [`cost_probe_exact`] — and
//! prints one line per call, `sampler scale value`, in call order. Run under callgrind
//! with `--toggle-collect` and `--dump-after` on the two wrappers, the n-th profile dump
//! holds exactly the instructions of the n-th call, which the script pairs with the n-th
//! line to group counts by returned value.
//!
//! The random words come from a seeded `ChaCha12Rng`, but not directly: ChaCha refills
//! a buffer of blocks every few dozen words, so the call that happens to trigger a refill
//! would cost more whatever it returns. Each call instead reads a [`ReplayRng`], whose
//! buffer is refilled from ChaCha *between* calls (outside the measured wrappers), and
//! whose `next_u64` costs the same few instructions every time. The samplers are generic
//! over the RNG, so their own code is exactly what a ChaCha-driven call runs.

use std::convert::Infallible;
use std::io::{BufWriter, Write};

use privq_core::sample::{BoundedDiscreteLaplace, DiscreteLaplace};
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng, TryRng};

/// Words in the replay buffer (a power of two, so indexing needs only a mask).
const WORDS: usize = 1 << 12;

/// An RNG replaying pre-drawn words at a constant cost per word.
///
/// `refill` tops the consumed words up from the source RNG; call it between measured
/// calls. Indices wrap modulo [`WORDS`], so `next_u64` never branches.
pub struct ReplayRng {
    words: Box<[u64; WORDS]>,
    pos: usize,
}

impl ReplayRng {
    /// A full buffer from `source`.
    pub fn new(source: &mut ChaCha12Rng) -> Self {
        let mut words = Box::new([0u64; WORDS]);
        for w in words.iter_mut() {
            *w = source.next_u64();
        }
        ReplayRng { words, pos: 0 }
    }

    /// Replaces the words used since the last refill with fresh ones from `source`, and
    /// returns how many that was.
    pub fn refill(&mut self, source: &mut ChaCha12Rng) -> usize {
        let used = self.pos;
        for i in 0..used {
            self.words[i % WORDS] = source.next_u64();
        }
        self.pos = 0;
        used
    }
}

impl TryRng for ReplayRng {
    type Error = Infallible;

    #[inline(always)]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.try_next_u64()? as u32)
    }

    #[inline(always)]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let w = self.words[self.pos % WORDS];
        self.pos += 1;
        Ok(w)
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let w = self.try_next_u64()?.to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
        Ok(())
    }
}

/// One bounded-work sample: the measured unit for callgrind (`--toggle-collect`).
#[inline(never)]
pub fn cost_probe_bounded(sampler: &BoundedDiscreteLaplace, rng: &mut ReplayRng) -> i64 {
    // An undecided draw (probability ≤ 2⁻⁶⁴) is reported as i64::MIN.
    sampler.sample(rng).unwrap_or(i64::MIN)
}

/// One exact sample: the measured unit for callgrind (`--toggle-collect`).
#[inline(never)]
pub fn cost_probe_exact(sampler: &DiscreteLaplace, rng: &mut ReplayRng) -> i64 {
    sampler.sample(rng).unwrap_or(i64::MIN)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = match args.next() {
        Some(a) => a.parse().unwrap_or_else(|_| usage(&a)),
        None => 400,
    };
    let mut scales: Vec<u64> = args
        .map(|a| a.parse().unwrap_or_else(|_| usage(&a)))
        .collect();
    if scales.is_empty() {
        scales = vec![1, 10, 1000];
    }

    let out = std::io::stdout();
    let mut out = BufWriter::new(out.lock());
    let mut source = ChaCha12Rng::seed_from_u64(0x005a_3b1e);
    let mut rng = ReplayRng::new(&mut source);
    for &t in &scales {
        let bounded = BoundedDiscreteLaplace::new(t, 1).unwrap_or_else(|e| fail(t, e));
        let exact = DiscreteLaplace::new(t, 1).unwrap_or_else(|e| fail(t, e));
        for _ in 0..calls {
            let v = cost_probe_bounded(&bounded, &mut rng);
            let used = rng.refill(&mut source);
            writeln!(out, "bounded {t} {v} {used}").expect("stdout");
            let v = cost_probe_exact(&exact, &mut rng);
            let used = rng.refill(&mut source);
            writeln!(out, "exact {t} {v} {used}").expect("stdout");
        }
    }
    out.flush().expect("stdout");
}

fn usage(arg: &str) -> ! {
    eprintln!("sampler_cost: bad argument {arg:?}\nusage: sampler_cost [CALLS] [SCALE...]");
    std::process::exit(2);
}

fn fail(t: u64, e: privq_host::Error) -> ! {
    eprintln!("sampler_cost: scale {t}: {e}");
    std::process::exit(2);
}
