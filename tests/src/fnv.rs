//! 64-bit FNV-1a, the digest the known-answer check compares across targets.

/// FNV-1a offset basis (64-bit).
const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a prime (64-bit).
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// A running 64-bit FNV-1a digest. Multi-byte values are fed little-endian, so the
/// digest is the same on every target whatever its native byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv1a64 {
    /// An empty digest.
    pub const fn new() -> Self {
        Fnv1a64(OFFSET_BASIS)
    }

    /// Feeds bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(PRIME);
        }
    }

    /// Feeds a `u64` (8 bytes, little-endian).
    pub fn u64(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }

    /// Feeds an `i64` (8 bytes, little-endian two's complement).
    pub fn i64(&mut self, x: i64) {
        self.bytes(&x.to_le_bytes());
    }

    /// Feeds a `bool` as one byte.
    pub fn bool(&mut self, x: bool) {
        self.bytes(&[u8::from(x)]);
    }

    /// The digest so far.
    pub const fn finish(&self) -> u64 {
        self.0
    }
}

/// Text (e.g. an error's `Display`) feeds its UTF-8 bytes.
impl core::fmt::Write for Fnv1a64 {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.bytes(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Fnv1a64;

    #[test]
    fn published_vectors() {
        // Reference values of the FNV-1a 64-bit test suite.
        let digest = |s: &[u8]| {
            let mut h = Fnv1a64::new();
            h.bytes(s);
            h.finish()
        };
        assert_eq!(digest(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(digest(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(digest(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
