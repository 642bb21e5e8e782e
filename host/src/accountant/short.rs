//! Short numbers: ε, ρ and δ for reading, exactly or rounded in the safe direction.

/// An ε or ρ exactly (`num/den`, or `num` when `den` is 1, as their `Display`),
/// or as [`short_ratio`] rounded up.
pub(super) fn fraction(num: u64, den: u64, exact: bool) -> String {
    match (exact, den) {
        (true, 1) => num.to_string(),
        (true, _) => format!("{num}/{den}"),
        (false, _) => short_ratio(num, den, true),
    }
}

/// A δ exactly (`0`, else Rust's shortest round-trip `{:e}`: `1e-9`), or as [`short_f64`].
pub(super) fn delta_text(delta: f64, exact: bool) -> String {
    if exact && delta == 0.0 {
        "0".into()
    } else if exact {
        format!("{delta:e}")
    } else {
        short_f64(delta)
    }
}

/// `num/den` for reading: exact when numerator and denominator have at most four
/// digits (`1/2`, `3`, `7/40`), else a decimal of four significant digits (every
/// integer digit from 1000 on) rounded up (`up`) or down, computed on integers so
/// that the shown value is exactly on that side of the true one; scientific below
/// 10⁻⁴ (`1.235e-7`).
///
/// ```
/// use privq_host::accountant::short_ratio;
/// assert_eq!(short_ratio(1, 3, true), "1/3");
/// assert_eq!(short_ratio(617_283_945_617, 5_000_000_000_000, true), "0.1235");
/// ```
pub fn short_ratio(num: u64, den: u64, up: bool) -> String {
    if num == 0 || (num <= 9999 && den <= 9999) {
        return if den == 1 || num == 0 {
            num.to_string()
        } else {
            format!("{num}/{den}")
        };
    }
    let den = u128::from(den.max(1));
    let div = |n: u128| if up { n.div_ceil(den) } else { n / den };
    let mut n = u128::from(num);
    if n >= 1000 * den {
        return div(n).to_string();
    }
    // Scale by 10^k until n/den ∈ [1000, 10000): then n < 10⁴·den < 2⁷⁸.
    let mut exp = 0;
    while n < 1000 * den {
        n *= 10;
        exp -= 1;
    }
    decimal(div(n), exp)
}

/// An `f64` (a δ, or an ε converted from ρ) for reading: its shortest round-trip
/// form when that has at most four significant digits (`1e-9`, `1.5e-6`, `0.5`),
/// else four significant digits rounded up (an integer from 1000 on), so that it
/// never reads as less than the value; `0` for zero.
pub(crate) fn short_f64(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) {
        return if x == 0.0 { "0".into() } else { x.to_string() };
    }
    if x >= 1000.0 {
        return x.ceil().to_string();
    }
    // (digits, exponent) of Rust's `{:e}` form, e.g. "7.766e0" → (7766, -3).
    let split = |s: &str| -> (u128, i32) {
        let (mantissa, e) = s.split_once('e').unwrap_or((s, "0"));
        let digits = mantissa.replace('.', "");
        let e: i32 = e.parse().unwrap_or(0);
        (digits.parse().unwrap_or(0), e + 1 - digits.len() as i32)
    };
    let (m, exp) = split(&format!("{x:e}"));
    if m < 10_000 {
        return decimal(m, exp);
    }
    let four = format!("{x:.3e}");
    let (mut m, mut exp) = split(&four);
    if four.parse::<f64>().is_ok_and(|shown| shown < x) {
        m += 1;
        if m == 10_000 {
            (m, exp) = (1000, exp + 1);
        }
    }
    decimal(m, exp)
}

/// A privacy cost (an ε or ρ as `f64`, ≥ 0) to `decimals` decimals, rounded **up**:
/// the text never reads as less than the cost, so a printed spend never
/// understates what was spent (round-to-nearest would print ε = 0.12346 as
/// `0.1235` at four decimals — fine — but 0.12344 as `0.1234`, below the spend).
/// Non-finite values print as Rust prints them; a negative value (no cost is) is
/// rounded to nearest.
///
/// ```
/// use privq_host::accountant::round_up;
/// assert_eq!(round_up(0.123_44, 4), "0.1235");
/// assert_eq!(round_up(0.5, 4), "0.5000");
/// assert_eq!(round_up(9.999_91, 4), "10.0000");
/// assert_eq!(round_up(2.0, 0), "2");
/// ```
pub fn round_up(x: f64, decimals: usize) -> String {
    let shown = format!("{x:.decimals$}");
    if !(x.is_finite() && x > 0.0) || shown.parse::<f64>().is_ok_and(|s| s >= x) {
        return shown;
    }
    // One unit in the last decimal place up, on the digits (exact).
    let mut digits: Vec<u8> = shown.into_bytes();
    let mut carry = true;
    for d in digits.iter_mut().rev() {
        if !carry {
            break;
        }
        match *d {
            b'9' => *d = b'0',
            b'0'..=b'8' => {
                *d += 1;
                carry = false;
            }
            _ => {}
        }
    }
    if carry {
        digits.insert(0, b'1');
    }
    String::from_utf8(digits).unwrap_or_default()
}

/// `m · 10^exp` (m > 0) in decimal, trailing zeros dropped; scientific below 10⁻⁴.
fn decimal(mut m: u128, mut exp: i32) -> String {
    while m > 0 && m.is_multiple_of(10) {
        m /= 10;
        exp += 1;
    }
    let digits = m.to_string();
    let int_len = digits.len() as i32 + exp;
    if int_len - 1 < -4 {
        let (lead, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        return format!("{lead}{point}{rest}e{}", int_len - 1);
    }
    if exp >= 0 {
        format!("{digits}{}", "0".repeat(exp as usize))
    } else if int_len > 0 {
        let (int, frac) = digits.split_at(int_len as usize);
        format!("{int}.{frac}")
    } else {
        format!("0.{}{digits}", "0".repeat(int_len.unsigned_abs() as usize))
    }
}
