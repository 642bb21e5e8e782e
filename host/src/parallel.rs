//! Data parallelism (rayon) that survives `fork`.
//!
//! rayon's global thread pool is started once per process; a child forked after
//! it started (Python's `multiprocessing` on Linux, a pre-forking server) holds
//! the pool's bookkeeping but none of its threads, and the first parallel call
//! there waits forever. So the first process to run anything in parallel here
//! records its id, and a process with another id — a forked child — runs the
//! same work sequentially. Results never depend on which way it ran: every
//! parallel call below computes each item on its own and keeps their order.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

/// The id of the process that started rayon's global pool (0: none yet).
static POOL_PROCESS: AtomicU32 = AtomicU32::new(0);

/// True when this process may use rayon's global pool: it started the pool, or
/// nothing has (a child forked before the parent ran anything in parallel starts
/// its own).
pub(crate) fn enabled() -> bool {
    let me = std::process::id();
    match POOL_PROCESS.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => true,
        Err(owner) => owner == me,
    }
}

/// `f` of every item, in order, in parallel when [`enabled`]; the first error
/// (in item order when sequential, any when parallel) is returned.
pub(crate) fn try_map<T, R, E, F>(items: &[T], f: F) -> Result<Vec<R>, E>
where
    T: Sync,
    R: Send,
    E: Send,
    F: Fn(&T) -> Result<R, E> + Sync + Send,
{
    if enabled() {
        items.par_iter().map(f).collect()
    } else {
        items.iter().map(f).collect()
    }
}

/// `f(item)` for every item, in parallel (one task per item) when `parallel` and
/// [`enabled`]; each item is computed on its own, so the results do not depend on
/// the threads.
pub(crate) fn each_mut<T: Send>(items: &mut [T], parallel: bool, f: impl Fn(&mut T) + Sync + Send) {
    if parallel && items.len() > 1 && enabled() {
        items.par_iter_mut().with_max_len(1).for_each(f);
    } else {
        items.iter_mut().for_each(f);
    }
}

/// `f(k, out_chunk, src_chunk)` for the consecutive chunks of `chunk` cells (`k`
/// counts them from 0; `src` empty: every `src_chunk` empty), in parallel when
/// [`enabled`] and `out` has at least `min_parallel` cells; the chunks' results in
/// order. The chunks are the same either way, so a result combined from them in
/// order does not depend on the threads.
pub(crate) fn chunks<R: Send>(
    out: &mut [f64],
    src: &[f64],
    chunk: usize,
    min_parallel: usize,
    f: impl Fn(usize, &mut [f64], &[f64]) -> R + Sync + Send,
) -> Vec<R> {
    let parallel = out.len() >= min_parallel && enabled();
    let src_chunk = |k: usize| {
        src.get(k * chunk..src.len().min((k + 1) * chunk))
            .unwrap_or(&[])
    };
    if parallel {
        out.par_chunks_mut(chunk)
            .enumerate()
            .map(|(k, o)| f(k, o, src_chunk(k)))
            .collect()
    } else {
        out.chunks_mut(chunk)
            .enumerate()
            .map(|(k, o)| f(k, o, src_chunk(k)))
            .collect()
    }
}

/// The largest value of `x` (−∞ when empty), in parallel chunks from
/// `min_parallel` cells on (a maximum is exact in any order).
pub(crate) fn max(x: &[f64], chunk: usize, min_parallel: usize) -> f64 {
    let part = |c: &[f64]| c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if x.len() >= min_parallel && enabled() {
        x.par_chunks(chunk)
            .map(part)
            .reduce(|| f64::NEG_INFINITY, f64::max)
    } else {
        part(x)
    }
}

/// `f(out[i], src[i])` for every cell (`src` empty: `f(out[i], &0.0)`), in
/// parallel chunks of `chunk` cells when [`enabled`] and `out` has at least
/// `min_parallel` cells.
pub(crate) fn elementwise(
    out: &mut [f64],
    src: &[f64],
    chunk: usize,
    min_parallel: usize,
    f: impl Fn(&mut f64, &f64) + Sync,
) {
    let sequential = |out: &mut [f64], src: &[f64]| {
        if src.is_empty() {
            out.iter_mut().for_each(|o| f(o, &0.0));
        } else {
            out.iter_mut().zip(src).for_each(|(o, x)| f(o, x));
        }
    };
    if out.len() < min_parallel || !enabled() {
        sequential(out, src);
    } else if src.is_empty() {
        out.par_chunks_mut(chunk).for_each(|o| sequential(o, &[]));
    } else {
        out.par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(o, x)| sequential(o, x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways_give_the_same_values_in_order() {
        let items: Vec<u32> = (0..1000).collect();
        let par = try_map(&items, |&x| Ok::<_, ()>(x * 3)).unwrap();
        let seq: Vec<u32> = items.iter().map(|&x| x * 3).collect();
        assert_eq!(par, seq);
        assert_eq!(
            try_map(&items, |&x| if x == 7 { Err(x) } else { Ok(x) }),
            Err(7)
        );
        let src: Vec<f64> = (0..100_000).map(f64::from).collect();
        let mut a = vec![1.0; src.len()];
        let mut b = a.clone();
        elementwise(&mut a, &src, 1 << 10, 1, |o, x| *o += x.sqrt());
        elementwise(&mut b, &src, 1 << 10, usize::MAX, |o, x| *o += x.sqrt());
        assert_eq!(a, b);
        let mut a = vec![0.0; src.len()];
        let mut b = a.clone();
        let sum = |_, o: &mut [f64], x: &[f64]| {
            o.iter_mut()
                .zip(x)
                .map(|(o, x)| {
                    *o = x.sqrt();
                    *o
                })
                .sum::<f64>()
        };
        let pa = chunks(&mut a, &src, 1 << 10, 1, sum);
        let pb = chunks(&mut b, &src, 1 << 10, usize::MAX, sum);
        assert_eq!((a, pa.len()), (b, 98));
        assert_eq!(pa, pb);
        let mut c = vec![1.0; 10_000];
        let ks = chunks(&mut c, &[], 1 << 10, 1, |k, o, x| {
            assert!(x.is_empty());
            o.iter_mut().for_each(|v| *v += k as f64);
            k
        });
        assert_eq!(ks, (0..10).collect::<Vec<_>>());
        assert_eq!((c[0], c[1 << 10], c[9_999]), (1.0, 2.0, 10.0));
        assert_eq!(max(&src, 1 << 10, 1), 99_999.0);
        assert_eq!(max(&src, 1 << 10, usize::MAX), 99_999.0);
        assert_eq!(max(&[], 8, 1), f64::NEG_INFINITY);
        let mut p: Vec<u64> = (0..100).collect();
        let mut q = p.clone();
        each_mut(&mut p, true, |x| *x = *x * *x + 1);
        each_mut(&mut q, false, |x| *x = *x * *x + 1);
        assert_eq!(p, q);
        assert!(enabled() && enabled());
    }
}
