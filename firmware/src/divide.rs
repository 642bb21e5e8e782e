//! 64-bit unsigned division in a few dozen bytes, for thumbv6m (no divide instruction).
//!
//! The Cortex-M0 has no divide instruction, so every `u64 / u64` and `u64 % u64` in the
//! image (exact ε arithmetic in privq-core, decimal line formatting here) calls the EABI
//! helper `__aeabi_uldivmod`. compiler-builtins' version (`u64_div_rem`, tuned for speed)
//! is about 950 bytes of flash; the bare-metal binary replaces it (its symbols are weak)
//! with a shim around [`udivmod64`], a bit-at-a-time restoring division of about 100
//! bytes: slower (64 steps), exact, and on no hot path of the firmware (a few divisions
//! per epoch). The same for `u32` ([`udivmod32`], `__aeabi_uidivmod`).

/// `(n / d, n % d)` by restoring binary long division; `d == 0` gives `(u64::MAX, n)`
/// (callers check for zero before dividing, as Rust's `/` does).
#[inline(never)]
pub fn udivmod64(n: u64, d: u64) -> (u64, u64) {
    // `n` shifts out its bits from the top while the quotient shifts in at the bottom
    // (shifts by one only: no variable-shift helper calls).
    let mut q = n;
    let mut r = 0u64;
    for _ in 0..64 {
        // r < d before the shift, so 2r + 1 < 2^65: its 65th bit is the carry.
        let carry = r >> 63;
        r = (r << 1) | (q >> 63);
        q <<= 1;
        if carry != 0 || r >= d {
            r = r.wrapping_sub(d);
            q |= 1;
        }
    }
    (q, r)
}

/// `(n / d, n % d)` for `u32`, the same way (`__aeabi_uidivmod`; compiler-builtins'
/// `u32_div_rem` is about 430 bytes on thumbv6m).
#[inline(never)]
pub fn udivmod32(n: u32, d: u32) -> (u32, u32) {
    let mut q = n;
    let mut r = 0u32;
    for _ in 0..32 {
        let carry = r >> 31;
        r = (r << 1) | (q >> 31);
        q <<= 1;
        if carry != 0 || r >= d {
            r = r.wrapping_sub(d);
            q |= 1;
        }
    }
    (q, r)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::{udivmod32, udivmod64};

    #[test]
    fn u32_equals_the_native_division() {
        let mut values = std::vec![
            0u32,
            1,
            2,
            3,
            10,
            0x7fff_ffff,
            0x8000_0000,
            u32::MAX - 1,
            u32::MAX
        ];
        let mut x = 0x2545_f491u32;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            values.push(x >> (x % 32));
        }
        for &n in &values {
            for &d in &values {
                if d != 0 {
                    assert_eq!(udivmod32(n, d), (n / d, n % d), "{n} / {d}");
                }
            }
        }
    }

    #[test]
    fn equals_the_native_division() {
        let edges = [
            0u64,
            1,
            2,
            3,
            7,
            10,
            0xffff_ffff,
            0x1_0000_0000,
            0x8000_0000_0000_0000,
            0x8000_0000_0000_0001,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut values = edges.to_vec();
        for _ in 0..2000 {
            // xorshift64: values of every magnitude.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for &n in &values {
            for &d in &values {
                if d != 0 {
                    assert_eq!(udivmod64(n, d), (n / d, n % d), "{n} / {d}");
                }
            }
        }
        assert_eq!(udivmod64(5, 0), (u64::MAX, 5));
    }
}
